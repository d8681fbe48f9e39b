"""The runner's per-step read stays bounded by what the step needs: a step of one session must not read the
parts of every other session ever stored, nor its own settled history again (the read runs on every step
of every live session)."""

import json

import psycopg
import pytest
from django.db import connection

from hangar.conversations import loop_selectors
from hangar.conversations.loop_selectors import _STEP_STATE, StepReader, step_state
from hangar.conversations.models import Message, Part
from hangar.conversations.services import message_create, session_create
from hangar.usage.gate import gate_params

pytestmark = pytest.mark.django_db(transaction=True)

# Shaped like real sessions: many messages of a few parts each (what makes a scan look cheap to the planner).
OTHER_SESSIONS, MESSAGES_EACH, PARTS_EACH = 100, 20, 3


def _assistant(session, parts: list[dict]) -> Message:
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
        parts=parts,
    )


@pytest.fixture
def busy_store(alice):
    """Alice's session (a settled message of 50 parts, an open one of two) among 100 other sessions holding
    6,000 parts."""
    session = session_create(actor=alice.actor, project=alice.project, title="mine")
    settled = _assistant(
        session,
        [{"type": "step-start"}]
        + [{"type": "text", "text": f"t{i}", "time": {"start": 1}} for i in range(49)],
    )
    _assistant(session, [{"type": "step-start"}, {"type": "text", "text": "hi", "time": {"start": 1}}])
    for _ in range(OTHER_SESSIONS):
        session_create(actor=alice.actor, project=alice.project, title="other")
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO conversations_message (id, session_id, role, data, created_at, updated_at)"
            " SELECT 'msg_f' || md5(s.id || g), s.id, 'assistant', '{}', now(), now()"
            " FROM conversations_session s, generate_series(1, %s) g WHERE s.id <> %s",
            [MESSAGES_EACH, session.pk],
        )
        cursor.execute(
            "INSERT INTO conversations_part (id, session_id, message_id, type, data, created_at, updated_at)"
            " SELECT 'prt_f' || md5(m.id || g), m.session_id, m.id, 'text', '{}', now(), now()"
            " FROM conversations_message m, generate_series(1, %s) g WHERE m.id LIKE 'msg\\_f%%'",
            [PARTS_EACH],
        )
        cursor.execute("ANALYZE conversations_message; ANALYZE conversations_part")
    return session, settled


def _part_rows_examined(plan: dict) -> int:
    """Rows of conversations_part that the executed plan read (kept or filtered out), over all its nodes."""
    own = 0
    if plan.get("Relation Name") == "conversations_part":
        own = (plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0)) * plan["Actual Loops"]
    return own + sum(_part_rows_examined(child) for child in plan.get("Plans", []))


def _executed_plan(session, settled: Message, plan_mode: str) -> dict:
    """The step-state read run on the app's own connection under EXPLAIN ANALYZE, with the plan Postgres
    would pick for it as written (custom) or as a prepared statement (generic)."""
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(f"SET plan_cache_mode = {plan_mode}")
        cursor.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + _STEP_STATE,
            {
                "after": "",
                "settled": [settled.pk],
                "session": session.pk,
                **gate_params(org_id=session.org_id, project_id=session.project_id, user_id=None),
            },
        )
        plan = cursor.fetchone()[0]
        cursor.execute("RESET plan_cache_mode")
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]


@pytest.mark.parametrize("plan_mode", ["force_custom_plan", "force_generic_plan"])  # generic: as prepared
def test_a_steps_read_examines_only_its_own_sessions_parts(busy_store, plan_mode):
    plan = _executed_plan(*busy_store, plan_mode)
    # The open message's two parts: not the 6,000 of other sessions, nor the 50 of the settled message.
    assert _part_rows_examined(plan["Plan"]) == 2


def test_the_apps_connections_never_jit_compile_a_statement(busy_store):
    """JIT compiling cost ~10 ms a statement that runs in 0.1 ms; a high estimate is enough to trigger it."""
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
    assert "JIT" not in _executed_plan(*busy_store, "force_generic_plan")


def test_a_steps_read_returns_the_unsettled_messages_parts_in_order(busy_store):
    session, settled = busy_store
    state = step_state(session, settled=[settled.pk])
    assert [m.role for m in state.messages] == ["assistant", "assistant"]
    assert settled.pk not in state.parts
    (other,) = state.parts.values()
    assert [p["type"] for p in other] == ["step-start", "text"]


def _completed(session, text: str, message_id: str | None = None) -> Message:
    data = {
        "role": "user",
        "time": {"created": 1},
        "agent": "build",
        "model": {"providerID": "p", "modelID": "m"},
    }
    parts = [{"type": "text", "text": text}]
    if message_id is None:
        return message_create(session=session, data=data, parts=parts)
    # Written as another process's slow transaction would leave it: the id taken early, the rows later.
    message = Message.objects.create(id=message_id, session=session, role="user", data=data)
    Part.objects.create(
        id=f"prt_{message_id[4:]}", session=session, message=message, type="text", data={**parts[0]}
    )
    return message


def test_a_runner_reads_only_the_messages_after_its_settled_prefix(alice, monkeypatch):
    """A long session's step read does not grow with its history: what the runner already holds settled
    is not read again."""
    session = session_create(actor=alice.actor, project=alice.project, title="long")
    first = [_completed(session, f"m{i}") for i in range(5)]
    afters = []
    real = loop_selectors.step_state
    monkeypatch.setattr(
        loop_selectors,
        "step_state",
        lambda session, settled, after="": afters.append(after) or real(session, settled, after),
    )
    reader = StepReader(session)
    assert [m.pk for m in reader.read().messages] == [m.pk for m in first]
    newer = _completed(session, "m5")
    state = reader.read()
    assert afters == ["", first[-1].pk]  # the second read started after the five it holds
    assert [m.pk for m in state.messages] == [m.pk for m in first] + [newer.pk]
    assert [p["text"] for _info, parts in reader.history(state) for p in parts] == [f"m{i}" for i in range(6)]


def test_a_message_committed_late_inside_the_prefix_is_read_all_the_same(alice):
    """A message whose id was taken before a kept one's but whose row was written after (another process's
    slow transaction) is not skipped: the read notices the prefix changed and reads everything again."""
    session = session_create(actor=alice.actor, project=alice.project, title="late")
    first = [_completed(session, f"m{i}") for i in range(3)]
    reader = StepReader(session)
    reader.read()
    late = _completed(session, "late", message_id=first[0].pk + "0")  # sorts between m0 and m1
    state = reader.read()
    assert [m.pk for m in state.messages] == [first[0].pk, late.pk, first[1].pk, first[2].pk]
    texts = [p["text"] for _info, parts in reader.history(state) for p in parts]
    assert texts == ["m0", "late", "m1", "m2"]
