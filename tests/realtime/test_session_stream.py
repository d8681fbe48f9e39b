"""The session WebSocket: replay from Postgres, then live, with no gap and no duplicate."""

import json
import threading

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from hangar.conversations.events import publish, publish_ephemeral
from hangar.conversations.models import Event, Session
from hangar.conversations.services import session_create
from hangar.realtime import broadcast as broadcast_module
from hangar.realtime import consumers
from tests.realtime.helpers import communicator, receive_frames, receive_until_seq

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def new_session(persona) -> Session:
    return session_create(actor=persona.actor, project=persona.project, title="streamed")


def publish_ticks(session: Session, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        publish(session, "test.tick", {"i": i})


def seqs(frames: list[dict]) -> list[int]:
    return [f["seq"] for f in frames if f.get("seq") is not None]


async def test_it_replays_every_stored_event_from_after_zero(alice):
    session = await sync_to_async(new_session)(alice)
    await sync_to_async(publish_ticks)(session, 5)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=0", token=alice.token)
    assert (await comm.connect())[0]
    frames = await receive_frames(comm, 6)
    assert seqs(frames) == [1, 2, 3, 4, 5, 6]
    assert frames[0]["type"] == "session.created" and frames[0]["payload"]["info"]["id"] == session.pk
    assert frames[1] == {"seq": 2, "type": "test.tick", "payload": {"i": 0}, "session": session.pk}
    assert await comm.receive_nothing(0.3)
    await comm.disconnect()


async def test_after_n_replays_only_later_events_then_live_ones(alice):
    session = await sync_to_async(new_session)(alice)
    await sync_to_async(publish_ticks)(session, 4)  # seqs 2..5
    comm = communicator(f"/ws/sessions/{session.pk}/?after=3", token=alice.token)
    assert (await comm.connect())[0]
    assert seqs(await receive_frames(comm, 2)) == [4, 5]
    await sync_to_async(publish_ticks)(session, 2, start=10)
    live = await receive_frames(comm, 2)
    assert seqs(live) == [6, 7] and [f["payload"]["i"] for f in live] == [10, 11]
    await comm.disconnect()


async def test_events_published_during_replay_arrive_once_and_in_order(alice):
    """A thread publishes 300 events while the client connects with after=0."""
    session = await sync_to_async(new_session)(alice)
    await sync_to_async(publish_ticks)(session, 50)  # something to replay before the race starts
    started = threading.Event()

    def publisher():
        try:
            started.set()
            publish_ticks(session, 300, start=50)
        finally:
            connection.close()

    thread = threading.Thread(target=publisher)
    thread.start()
    started.wait()
    comm = communicator(f"/ws/sessions/{session.pk}/?after=0", token=alice.token)
    assert (await comm.connect(timeout=5))[0]
    frames = await receive_until_seq(comm, 351, timeout=15)
    await sync_to_async(thread.join)()
    assert seqs(frames) == list(range(1, 352))
    assert await comm.receive_nothing(0.3)
    await comm.disconnect()


async def test_a_burst_of_1000_events_arrives_complete_and_in_order(alice):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    await sync_to_async(publish_ticks)(session, 1000)
    frames = await receive_until_seq(comm, 1001, timeout=15)
    assert seqs(frames) == list(range(2, 1002))
    assert [f["payload"]["i"] for f in frames] == list(range(1000))
    await comm.disconnect()


async def test_a_lost_notification_is_filled_from_postgres_when_the_next_event_arrives(alice, monkeypatch):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    real_broadcast = broadcast_module.broadcast_many
    monkeypatch.setattr(
        broadcast_module, "broadcast_many", lambda groups, messages: None
    )  # Redis "drops" them
    await sync_to_async(publish_ticks)(session, 3)  # seqs 2..4: stored, never notified
    monkeypatch.setattr(broadcast_module, "broadcast_many", real_broadcast)
    await sync_to_async(publish_ticks)(session, 1, start=3)  # seq 5 reveals the gap
    frames = await receive_frames(comm, 4)
    assert seqs(frames) == [2, 3, 4, 5]
    assert [f["payload"]["i"] for f in frames] == [0, 1, 2, 3]
    await comm.disconnect()


async def test_a_lost_notification_for_the_last_event_is_found_by_the_idle_recheck(alice, monkeypatch):
    monkeypatch.setattr(consumers, "IDLE_RECHECK", 0.3)
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    monkeypatch.setattr(broadcast_module, "broadcast_many", lambda groups, messages: None)
    await sync_to_async(publish_ticks)(session, 1)
    assert seqs(await receive_frames(comm, 1, timeout=3)) == [2]
    await comm.disconnect()


async def test_token_deltas_are_forwarded_marked_ephemeral_and_not_stored(alice):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    delta = {
        "sessionID": session.pk,
        "messageID": "msg_1",
        "partID": "prt_1",
        "field": "text",
        "delta": "Hel",
    }
    await sync_to_async(publish_ephemeral)(session, "message.part.delta", delta)
    await sync_to_async(publish_ticks)(session, 1)
    ephemeral, stored = await receive_frames(comm, 2)
    assert ephemeral == {
        "seq": None,
        "ephemeral": True,
        "type": "message.part.delta",
        "payload": delta,
        "session": session.pk,
    }
    assert stored["seq"] == 2 and "ephemeral" not in stored
    types = await sync_to_async(
        lambda: list(Event.objects.filter(session=session).values_list("type", flat=True))
    )()
    assert types == ["session.created", "test.tick"]
    await comm.disconnect()


async def test_the_stream_closes_with_4410_after_the_session_is_deleted(alice):
    from hangar.conversations.session_services import session_delete

    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/?after=1", token=alice.token)
    assert (await comm.connect())[0]
    await sync_to_async(session_delete)(actor=alice.actor, session=session)
    frame = json.loads(await comm.receive_from(timeout=3))
    assert frame["type"] == "session.deleted" and frame["payload"]["sessionID"] == session.pk
    assert (await comm.receive_output(timeout=3)) == {"type": "websocket.close", "code": 4410}
