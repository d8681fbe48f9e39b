"""What every fault test asserts once the session has settled: its event log is dense and free of
duplicates, a client resuming the stream from a sequence number gets exactly the rest, and no session is
left busy or leased."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

from asgiref.sync import async_to_sync

from hangar.conversations.models import Event, Message, Part, Session
from tests.realtime.helpers import communicator, receive_until_seq


def bash(call_id: str, command: str) -> dict:
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


def seq_now(session: Session) -> int:
    return Session.objects.get(pk=session.pk).event_seq


def _events(session: Session) -> list[Event]:
    return list(Event.objects.filter(session=session).order_by("seq"))


def _listing(events: list[Event]) -> str:
    return "\n".join(f"{e.seq} {e.type} {json.dumps(e.payload)[:160]}" for e in events)


def assert_sound_log(session: Session) -> list[Event]:
    """Seqs are exactly 1..event_seq; no event is stored twice; every part and message event names a row
    that exists, and each part reached its final state once."""
    session = Session.objects.get(pk=session.pk)
    events = _events(session)
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, session.event_seq + 1)), f"seqs not dense: {seqs}"

    seen: set[str] = set()
    for event in events:
        key = event.type + json.dumps(event.payload, sort_keys=True)
        assert key not in seen, f"event {event.seq} ({event.type}) stored twice: {_listing(events)}"
        seen.add(key)

    part_ids = set(Part.objects.filter(session=session).values_list("id", flat=True))
    message_ids = set(Message.objects.filter(session=session).values_list("id", flat=True))
    final: dict[str, int] = {}
    for event in events:
        if event.type == "message.part.updated":
            part = event.payload["part"]
            assert part["id"] in part_ids, f"event {event.seq} tells of a part that was never stored"
            state = part.get("state", {}).get("status")
            if state in ("completed", "error"):
                final[part["id"]] = final.get(part["id"], 0) + 1
        elif event.type == "message.updated":
            assert event.payload["info"]["id"] in message_ids, f"event {event.seq}: unknown message"
    assert all(n == 1 for n in final.values()), f"a tool part finished more than once: {final}"
    return events


def assert_stream_resumes(persona, session: Session, after: int) -> None:
    """A client reconnecting with ?after=<seq> gets every later stored event once, in order, then nothing."""
    expected = [
        {"seq": e.seq, "type": e.type, "payload": e.payload, "session": session.pk}
        for e in _events(session)
        if e.seq > after
    ]
    assert expected, "nothing happened after the fault"

    async def resume() -> list[dict]:
        comm = communicator(f"/ws/sessions/{session.pk}/?after={after}", token=persona.token)
        connected, _ = await comm.connect(timeout=10)
        assert connected
        try:
            frames = await receive_until_seq(comm, expected[-1]["seq"], timeout=10)
            assert await comm.receive_nothing(0.3)
        finally:
            await comm.disconnect()
        return [f for f in frames if f.get("seq") is not None]

    assert async_to_sync(resume)() == expected


def assert_nothing_busy() -> None:
    stuck = list(Session.objects.exclude(status="idle").values_list("id", "status")) + list(
        Session.objects.exclude(lease_owner="").values_list("id", "lease_owner")
    )
    assert not stuck, f"sessions left busy or leased: {stuck}"


class LiveClient:
    """A client watching the session's stream through the fault, on a thread (and event loop) of its own.
    When its stream closes it reconnects with ?after=<the last seq it got>, as the web app does."""

    def __init__(self, persona, session: Session) -> None:
        self.path = f"/ws/sessions/{session.pk}/"
        self.token = persona.token
        self.frames: list[dict] = []
        self.reconnects = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self._thread.start()

    @property
    def last(self) -> int:
        return self.frames[-1]["seq"] if self.frames else 0

    async def _run(self) -> None:
        while not self._stop.is_set():
            comm = communicator(f"{self.path}?after={self.last}", token=self.token)
            try:
                connected, _ = await comm.connect(timeout=5)
                if connected:
                    await self._read(comm)
            except Exception:
                pass  # the stream failed under the fault: reconnect, as a browser would
            finally:
                with contextlib.suppress(Exception):
                    await comm.disconnect()
            if not self._stop.is_set():
                self.reconnects += 1
                await asyncio.sleep(0.5)

    async def _read(self, comm) -> None:
        while not self._stop.is_set():
            # receive_nothing, not receive_output(timeout): a timed-out receive cancels the consumer.
            if await comm.receive_nothing(0.5, interval=0.02):
                continue
            message = await comm.receive_output()
            if message["type"] == "websocket.close":
                return
            frame = json.loads(message["text"])
            if frame.get("seq") is not None:
                self.frames.append(frame)

    def wait_for_seq(self, seq: int, timeout: float = 30.0) -> list[dict]:
        """Every stored frame the client got once it has seq `seq` (IDLE_RECHECK may be what brings it)."""
        deadline = time.monotonic() + timeout
        while self.last < seq and time.monotonic() < deadline:
            time.sleep(0.1)
        return list(self.frames)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def assert_live_client_got_everything(client: LiveClient, session: Session) -> None:
    """The client that watched through the fault holds every stored event exactly once, in order."""
    expected = [
        {"seq": e.seq, "type": e.type, "payload": e.payload, "session": session.pk} for e in _events(session)
    ]
    got = client.wait_for_seq(expected[-1]["seq"])
    assert [f["seq"] for f in got] == [e["seq"] for e in expected], f"after {client.reconnects} reconnects"
    assert got == expected


def through_outage(predicate, timeout: float = 60.0):
    """wait_for across a database outage: a query that fails on a cut connection drops it and tries again."""
    from django.db import DatabaseError, connection

    def attempt():
        try:
            return predicate()
        except DatabaseError:
            connection.close()
            return None

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = attempt()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s")


def wait_workers_ready(count: int, timeout: float = 90.0) -> None:
    """Until `count` workers answer a control ping (a worker answers once it takes tasks): a fault
    injected before the worker that must recover is up would time the machine's load, not the recovery."""
    from hangar.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(app.control.ping(timeout=1.0)) >= count:
            return
    raise AssertionError(f"fewer than {count} workers answered within {timeout}s")
