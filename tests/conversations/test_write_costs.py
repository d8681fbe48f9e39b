"""The store's per-step writes stay cheap: each part or message boundary is ONE statement (row write, seq
bump and event together), and the event log keeps its guarantees (dense seqs, rows and events together,
nothing written when the write fails). These pins make a regression in the agent step's cost visible."""

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from hangar.conversations.events import publish_many
from hangar.conversations.models import Event, Message, Part, Session
from hangar.conversations.services import (
    message_create,
    message_update,
    part_upsert,
    parts_upsert,
    session_create,
    session_status_set,
)

pytestmark = pytest.mark.django_db(transaction=True)  # autocommit, as in the worker


@pytest.fixture
def message(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="costs")
    return message_create(
        session=session,
        data={
            "role": "assistant",
            "time": {"created": 1},
            "parentID": "msg_x",
            "modelID": "m",
            "providerID": "p",
            "mode": "build",
            "agent": "build",
            "path": {"cwd": "/workspace", "root": "/workspace"},
        },
    )


def seqs(session_id: str) -> list[int]:
    return list(Event.objects.filter(session_id=session_id).order_by("seq").values_list("seq", flat=True))


def test_a_text_part_boundary_costs_one_query(message):
    with CaptureQueriesContext(connection) as queries:
        part_upsert(message=message, data={"type": "text", "text": "hello", "time": {"start": 1, "end": 2}})
    assert len(queries.captured_queries) == 1


def test_a_tool_part_state_change_costs_one_query_and_updates_the_same_row(message):
    part = part_upsert(
        message=message,
        data={
            "type": "tool",
            "callID": "c1",
            "tool": "bash",
            "state": {"status": "pending", "input": {}, "raw": ""},
        },
    )
    with CaptureQueriesContext(connection) as queries:
        part_upsert(
            message=message,
            data={**part.data, "state": {"status": "running", "input": {}, "time": {"start": 1}}},
        )
    assert len(queries.captured_queries) == 1
    assert Part.objects.get(pk=part.pk).data["state"]["status"] == "running"
    assert Part.objects.filter(message=message).count() == 1


def test_a_message_create_and_update_cost_one_query_each(message):
    with CaptureQueriesContext(connection) as queries:
        message_update(message=message, data={**message.data, "finish": "stop"})
    assert len(queries.captured_queries) == 1
    assert Message.objects.get(pk=message.pk).data["finish"] == "stop"


def test_every_write_appends_its_event_with_the_next_dense_seq(message):
    part = part_upsert(message=message, data={"type": "text", "text": "a", "time": {"start": 1}})
    part_upsert(message=message, data={**part.data, "text": "ab"})
    message_update(message=message, data={**message.data, "finish": "stop"})
    session = Session.objects.get(pk=message.session_id)
    assert seqs(session.pk) == list(range(1, session.event_seq + 1))
    last = Event.objects.filter(session_id=session.pk).order_by("-seq").first()
    assert last.type == "message.updated" and last.payload["info"]["finish"] == "stop"


def test_several_events_reserve_consecutive_seqs_in_one_statement(message):
    session = Session.objects.get(pk=message.session_id)
    with CaptureQueriesContext(connection) as queries:
        events = publish_many(session, [("a.one", {"n": 1}), ("a.two", {"n": 2}), ("a.three", {"n": 3})])
    assert len(queries.captured_queries) == 1
    assert [e.seq for e in events] == [session.event_seq + 1, session.event_seq + 2, session.event_seq + 3]
    assert seqs(session.pk) == list(range(1, session.event_seq + 4))


def test_an_update_of_a_missing_message_writes_no_event_and_burns_no_seq(message):
    before = Session.objects.get(pk=message.session_id).event_seq
    ghost = Message(
        id="msg_doesnotexist0000000000000", session=message.session, role="assistant", data=message.data
    )
    with pytest.raises(Message.DoesNotExist):
        message_update(message=ghost, data=message.data)
    assert Session.objects.get(pk=message.session_id).event_seq == before
    assert seqs(message.session_id) == list(range(1, before + 1))


def test_a_step_close_writes_its_parts_message_and_usage_in_one_statement(message):
    session = Session.objects.get(pk=message.session_id)
    closing = [
        {"type": "patch", "hash": "abc1", "files": ["/workspace/a.py"]},
        {"type": "step-finish", "reason": "stop", "cost": 0.5, "tokens": {"input": 3, "output": 4}},
    ]
    with CaptureQueriesContext(connection) as queries:
        parts_upsert(
            message=message,
            parts=closing,
            message_data={**message.data, "finish": "stop"},
            usage=(0.5, {"input": 3, "output": 4, "reasoning": 0}),
        )
    assert len(queries.captured_queries) == 1
    session.refresh_from_db()
    assert session.cost == 0.5 and session.tokens == {"input": 3, "output": 4, "reasoning": 0}
    assert [p.type for p in Part.objects.filter(message=message).order_by("id")] == ["patch", "step-finish"]
    events = list(Event.objects.filter(session_id=session.pk).order_by("seq"))[-3:]
    assert [e.type for e in events] == ["message.part.updated", "message.part.updated", "message.updated"]
    assert events[-1].payload["info"]["finish"] == "stop"
    assert seqs(session.pk) == list(range(1, session.event_seq + 1))


def test_a_message_is_created_with_its_first_part_in_one_statement(message):
    with CaptureQueriesContext(connection) as queries:
        created = message_create(
            session=message.session,
            data={**message.data, "id": None},
            parts=[{"type": "step-start", "snapshot": "abc1"}],
        )
    assert len(queries.captured_queries) == 1
    assert Part.objects.get(message=created).data["snapshot"] == "abc1"


def test_a_failing_write_in_a_step_close_writes_none_of_it(message):
    ghost = Message(
        id="msg_doesnotexist0000000000000", session=message.session, role="assistant", data=message.data
    )
    before = Session.objects.get(pk=message.session_id)
    with pytest.raises((Message.DoesNotExist, IntegrityError)):  # the part's FK fails the whole statement
        parts_upsert(
            message=ghost,
            parts=[{"type": "step-finish", "reason": "stop", "cost": 1, "tokens": {}}],
            message_data=message.data,
            usage=(1.0, {"input": 1}),
        )
    after = Session.objects.get(pk=message.session_id)
    assert (after.event_seq, after.cost, after.tokens) == (before.event_seq, before.cost, before.tokens)
    assert not Part.objects.filter(message_id=ghost.pk).exists()


def test_a_status_change_is_one_statement_with_its_events(message):
    session = Session.objects.get(pk=message.session_id)
    with CaptureQueriesContext(connection) as queries:
        session_status_set(session=session, status="idle")
    assert len(queries.captured_queries) == 1
    session.refresh_from_db()
    assert session.status == "idle"
    assert [e.type for e in Event.objects.filter(session_id=session.pk).order_by("-seq")[:2]][::-1] == [
        "session.status",
        "session.idle",
    ]
