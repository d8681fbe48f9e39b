"""The worker's broadcast sender against a Redis that stalls or stops answering (private Redis: the shared
one is never touched). Its backlog stays bounded, stored events' notifications are never lost without a
newer one telling readers to fill the gap from Postgres, and a dead connection is replaced."""

import time
import uuid

import pytest
import redis
from channels.layers import get_channel_layer

from hangar.realtime import broadcast
from tests.private_services import PrivateRedis, StallProxy


def _layer_config(url: str) -> dict:
    return {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": url, "socket_timeout": None, "max_connections": 1000}]},
        }
    }


@pytest.fixture
def private_redis():
    server = PrivateRedis().start()
    yield server
    server.stop()


class Listener:
    """A plain Redis subscriber on a group's channel, straight to the server (not through a proxy)."""

    def __init__(self, url: str, group: str) -> None:
        self.layer = get_channel_layer()
        self.pubsub = redis.Redis.from_url(url).pubsub(ignore_subscribe_messages=True)
        self.pubsub.subscribe(f"asgi__group__{group}")
        self.pubsub.get_message(timeout=1)

    def events(self, timeout: float, until=lambda event: False) -> list[dict]:
        """What arrives within `timeout`, stopping early after an event for which `until` is true."""
        got: list[dict] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.2)
            if message:
                got.append(self.layer.deserialize(message["data"])["event"])
                if until(got[-1]):
                    break
        return got


def _durable(session: str, seq: int) -> dict:
    return {"seq": seq, "type": "message.part.updated", "payload": {"n": seq}, "session": session}


def _delta(session: str) -> dict:
    payload = {"delta": "x" * 20}
    return {
        "seq": None,
        "ephemeral": True,
        "type": "message.part.delta",
        "payload": payload,
        "session": session,
    }


def test_a_stalled_redis_keeps_the_broadcast_backlog_bounded_and_loses_no_last_seq(private_redis, settings):
    settings.CHANNEL_LAYERS = _layer_config(private_redis.url)
    group = f"session.{uuid.uuid4().hex}"
    listener = Listener(private_redis.url, group)
    private_redis.pause()
    try:
        started = time.monotonic()
        sessions = ["ses_a", "ses_b", "ses_c"]
        for seq in range(1, 601):
            for session in sessions:
                broadcast.broadcast([group], _durable(session, seq))
            for _ in range(40):
                broadcast.broadcast([group], _delta(sessions[0]))
        elapsed = time.monotonic() - started
        backlog = broadcast._outbox.qsize()
    finally:
        private_redis.resume()
    assert elapsed < 10, "publishing waited on the stalled Redis"
    assert backlog <= 20_010, f"{backlog} notifications queued in memory"  # MAX_QUEUED + a few set aside

    done: set[str] = set()

    def all_last(event):
        if event["seq"] == 600:
            done.add(event["session"])
        return done == set(sessions)

    events = listener.events(30, until=all_last)
    assert done == set(sessions), f"a session's newest stored event was never announced ({len(events)} seen)"
    for session in sessions:
        seqs = [e["seq"] for e in events if e["session"] == session and e["seq"] is not None]
        assert seqs == sorted(seqs), (
            "stored-event notifications out of order"
        )  # a repeat is skipped by readers


def test_a_redis_connection_that_stops_answering_is_replaced(private_redis, settings):
    proxy = StallProxy(private_redis.port)
    settings.CHANNEL_LAYERS = _layer_config(f"redis://127.0.0.1:{proxy.port}/0")
    group = f"session.{uuid.uuid4().hex}"
    listener = Listener(private_redis.url, group)
    try:
        broadcast.broadcast([group], _durable("ses_a", 1))
        assert [e["seq"] for e in listener.events(5, until=lambda e: True)] == [1]
        proxy.stall()  # the sender's connection now swallows everything, for good
        broadcast.broadcast([group], _durable("ses_a", 2))
        time.sleep(0.5)
        broadcast.broadcast([group], _durable("ses_a", 3))
        events = listener.events(20, until=lambda e: e["seq"] == 3)
        assert any(e["seq"] == 3 for e in events), "the sender is stuck on a dead connection"
    finally:
        proxy.close()
