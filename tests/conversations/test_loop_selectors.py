"""The runner's per-step read stays bounded by what the step needs: a step of one session must not read the
parts of every other session ever stored, nor its own settled history again (the read runs on every step
of every live session)."""

import json

import psycopg
import pytest
from django.db import connection

from hangar.conversations.loop_selectors import _STEP_STATE, step_state
from hangar.conversations.models import Message
from hangar.conversations.services import message_create, session_create

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
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + _STEP_STATE, [[settled.pk], session.pk])
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
