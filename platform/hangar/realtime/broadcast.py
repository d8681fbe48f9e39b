"""Fan-out of event notifications to channel-layer groups, callable from sync code (services, workers).

The engine publishes several events per agent step from worker threads. `async_to_sync(group_send)`
builds event-loop machinery on every call (and channels_redis keeps one layer + connection per loop), so
from sync code we PUBLISH the exact bytes `RedisPubSubChannelLayer.group_send` would: the layer's own
serializer (msgpack) on the Redis channel `<prefix>__group__<group>` of the group's shard. One pipelined
round trip covers all groups of an event. Any other layer backend falls back to `async_to_sync`.

Broadcasts are handed to one sender thread per process and sent from there, so an agent step never
waits on Redis (~0.5 ms a round trip, five or so per step). One FIFO and one sender keep every
session's events in order, and whatever queued up while a send was in flight goes in the next single
pipelined round trip. The FIFO is bounded (`Outbox`): a stalled or dead Redis must neither grow the
worker's memory nor block the sender forever (publishes time out; a failed batch is retried with a
backoff, keeping each session's last stored-event notification, since readers fill sequence gaps from
Postgres and need only the newest seq to notice one).
"""

import atexit
import collections
import os
import threading
import time

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from channels_redis.utils import _consistent_hash, decode_hosts
from django.conf import settings

from hangar.logging import get_logger

log = get_logger(__name__)

EVENT = "hangar.event"
PUBLISH_TIMEOUT_S = 2.0
HEALTH_CHECK_S = 15

_lock = threading.Lock()
_shards: list[redis.Redis] | None = None
_shards_layer = None


def _shard_clients(layer: RedisPubSubChannelLayer) -> list[redis.Redis]:
    """One thread-safe sync client per configured host, built once per layer object."""
    global _shards, _shards_layer
    if _shards is not None and _shards_layer is layer:
        return _shards
    with _lock:
        if _shards is None or _shards_layer is not layer:
            clients = []
            for host in decode_hosts(layer._kwargs.get("hosts")):
                host = dict(host)
                # A publish answers in well under a millisecond: one that has not answered in seconds is on
                # a dead or stalled Redis. Time it out (the layer's subscribers wait without one), and
                # check a connection that sat idle before reusing it; redis-py reconnects on the next call.
                host.update(
                    socket_timeout=PUBLISH_TIMEOUT_S,
                    socket_connect_timeout=PUBLISH_TIMEOUT_S,
                    socket_keepalive=True,
                    health_check_interval=HEALTH_CHECK_S,
                )
                host.setdefault("max_connections", 1000)
                address = host.pop("address", None)
                if address:
                    clients.append(redis.Redis.from_url(address, **host))
                else:
                    clients.append(redis.Redis(**host))
            _shards, _shards_layer = clients, layer
    return _shards


def _group_channel(layer: RedisPubSubChannelLayer, group: str) -> str:
    return f"{layer._kwargs.get('prefix', 'asgi')}__group__{group}"


def send_batch_to_groups(batch: list[tuple[list[str], list[dict]]]) -> None:
    """Send each (groups, messages) of `batch`, in order; one pipelined round trip per shard for all."""
    layer = get_channel_layer()
    if not isinstance(layer, RedisPubSubChannelLayer):
        for groups, messages in batch:
            for message in messages:
                for group in groups:
                    async_to_sync(layer.group_send)(group, message)
        return
    clients = _shard_clients(layer)
    by_shard: dict[int, list[tuple[str, bytes]]] = {}
    for groups, messages in batch:
        bodies = [layer.serialize(message) for message in messages]
        channels = [_group_channel(layer, group) for group in groups]
        for body in bodies:  # message order is kept per channel: readers see seqs in order
            for channel in channels:
                by_shard.setdefault(_consistent_hash(channel, len(clients)), []).append((channel, body))
    for index, sends in by_shard.items():
        if len(sends) == 1:
            clients[index].publish(*sends[0])
            continue
        pipe = clients[index].pipeline(transaction=False)
        for channel, body in sends:
            pipe.publish(channel, body)
        pipe.execute()


def broadcast(groups: list[str], message: dict) -> None:
    """Notify `groups` of one event (`{"seq", "type", "payload", "session", "ephemeral"?}`)."""
    broadcast_many(groups, [message])


def broadcast_many(groups: list[str], messages: list[dict]) -> None:
    """Notify `groups` of several events of one session, in order, without waiting for Redis."""
    _sender().put(groups, [{"type": EVENT, "event": message} for message in messages])


MAX_QUEUED = settings.HANGAR_BROADCAST_MAX_QUEUED  # notifications waiting to be sent
MAX_BATCH = 500  # notifications per round trip
RETRY_MAX_S = 5.0


class Outbox:
    """The sender's queue, bounded. When full, the oldest token delta goes first (the part's final text
    is stored); a stored event's notification is never just dropped: the last one of its session (per
    set of groups) is kept aside and sent before anything newer, so a reader sees the seq jump and reads
    the gap from Postgres (hangar.realtime.consumers). A failed send puts back, the same way, the last
    stored-event notification of each session of the batch, and the sender retries with a backoff."""

    def __init__(self, cap: int = MAX_QUEUED) -> None:
        self.cap = cap
        self._items: collections.deque = collections.deque()  # (groups, messages, ephemeral)
        self._queued = 0  # notifications in _items
        self._ephemeral = 0  # of which token deltas
        self._resync: dict[tuple, tuple[list[str], dict]] = {}  # (groups, session) -> last dropped
        self._cond = threading.Condition()
        self.dropped_ephemeral = 0
        self.coalesced = 0

    def qsize(self) -> int:
        with self._cond:
            return self._queued + len(self._resync)

    def put(self, groups: list[str], messages: list[dict]) -> None:
        ephemeral = all(m["event"].get("ephemeral") for m in messages)
        with self._cond:
            self._items.append((groups, messages, ephemeral))
            self._queued += len(messages)
            self._ephemeral += len(messages) if ephemeral else 0
            while self._queued > self.cap and self._shed():
                pass
            self._cond.notify()

    def _shed(self) -> bool:
        """Make room: drop the oldest delta, else set aside the oldest stored-event notification."""
        if self._ephemeral:
            for index, (_groups, messages, ephemeral) in enumerate(self._items):
                if ephemeral:
                    del self._items[index]
                    self._queued -= len(messages)
                    self._ephemeral -= len(messages)
                    self.dropped_ephemeral += len(messages)
                    return True
        if len(self._items) <= 1:
            return False
        groups, messages, _ = self._items.popleft()
        self._queued -= len(messages)
        self._set_aside(groups, messages)
        return True

    def _set_aside(self, groups: list[str], messages: list[dict]) -> None:
        for message in messages:
            event = message["event"]
            if event.get("seq") is None:
                continue
            key = (tuple(groups), event.get("session"))
            kept = self._resync.get(key)
            if kept is None or (kept[1]["event"]["seq"] or 0) < event["seq"]:
                self.coalesced += 1 if kept else 0
                self._resync[key] = (groups, message)

    def put_back(self, batch: list) -> None:
        """A batch that could not be sent: keep its sessions' last stored-event notifications."""
        with self._cond:
            for groups, messages in batch:
                self._set_aside(groups, messages)

    def take(self, timeout: float | None = None) -> list:
        """Everything set aside (older than anything queued), then up to MAX_BATCH queued entries."""
        with self._cond:
            if not self._items and not self._resync:
                self._cond.wait(timeout)
            batch = [(groups, [message]) for groups, message in self._resync.values()]
            self._resync.clear()
            while self._items and len(batch) < MAX_BATCH:
                groups, messages, ephemeral = self._items.popleft()
                self._queued -= len(messages)
                self._ephemeral -= len(messages) if ephemeral else 0
                batch.append((groups, messages))
            return batch


_outbox = Outbox()
_sender_pid = 0
_sender_lock = threading.Lock()


def _sender() -> Outbox:
    global _sender_pid
    if _sender_pid != os.getpid():  # first use, or a forked child: its parent's thread did not come along
        with _sender_lock:
            if _sender_pid != os.getpid():
                threading.Thread(target=_send_forever, name="broadcast-sender", daemon=True).start()
                _sender_pid = os.getpid()
    return _outbox


def _send_forever() -> None:
    backoff = 0.0
    while True:
        batch = _outbox.take()
        if batch and not _send_batch(batch):
            _outbox.put_back(batch)
            backoff = min(RETRY_MAX_S, backoff * 2 or 0.2)
            time.sleep(backoff)
        else:
            backoff = 0.0


def _send_batch(batch: list) -> bool:
    """Send `batch`: one pipeline per shard for all of it. False if Redis failed (timed out, refused)."""
    try:
        send_batch_to_groups(batch)
        return True
    except Exception:
        log.warning("broadcast_failed", events=sum(len(m) for _g, m in batch), exc_info=True)
        return False


@atexit.register
def flush() -> None:
    """At exit, send what is still queued (best effort: the sender thread may hold one batch in flight,
    and whatever is lost is still in Postgres for readers' gap-fill)."""
    while batch := _outbox.take(timeout=0):
        if not _send_batch(batch):
            return
