"""Reads for the session's runner, the worker that holds its lease (hangar.engine.leases).

Not scoped to an actor: no person is asking, the lease is the authority, and the session id came from
the run the platform itself enqueued. The loop re-reads its state at every step (seed 000 §3.2), so
these are its per-step reads: fixed statements, prepared (hangar.rawsql), no ORM query
building, rows turned into the few fields the loop uses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from hangar.accounts.models import Org
from hangar.conversations.models import Message, Session
from hangar.projects.models import Project
from hangar.rawsql import instances, run, select_list

_RUN_TABLES = ((Session, "s"), (Project, "p"), (Org, "o"))
_RUN_START = (
    f"SELECT {', '.join(select_list(model, alias) for model, alias in _RUN_TABLES)}"
    " FROM conversations_session s JOIN projects_project p ON p.id = s.project_id"
    " JOIN accounts_org o ON o.id = s.org_id WHERE s.id = %s"
)

# What a step needs, in one round trip and one JSON document: the permission layers, every message, and
# the parts of the messages the caller has not settled (those it holds can no longer change). Each open
# message's parts are a subquery of their own on the part's message key: written as a join, the planner
# could not know the session (a correlated parameter) and hashed the messages against a scan of the whole
# part table, a read that grew with every session ever stored (tests/conversations/test_runner_reads.py).
_STEP_STATE = (
    "SELECT s.permission, p.permission_rules,"
    " (SELECT coalesce(json_agg(json_build_array(m.id, m.role, m.data) ORDER BY m.id), '[]')"
    "  FROM conversations_message m WHERE m.session_id = s.id),"
    " (SELECT coalesce(json_agg(json_build_array(m.id, (SELECT coalesce(json_agg(x.data ORDER BY x.id), '[]')"
    "    FROM conversations_part x WHERE x.message_id = m.id)) ORDER BY m.id), '[]')"
    "  FROM conversations_message m WHERE m.session_id = s.id AND NOT (m.id = ANY(%b::text[])))"
    " FROM conversations_session s JOIN projects_project p ON p.id = s.project_id WHERE s.id = %s"
)
_PARTS = (
    "SELECT message_id, data FROM conversations_part WHERE session_id = %s AND message_id = ANY(%s)"
    " ORDER BY id"
)


def session_for_run(session_id: str) -> Session:
    """The session with its project and org, as a run starts (what select_related gives, prepared)."""
    rows = run(_RUN_START, [session_id])
    if not rows:
        raise Session.DoesNotExist(session_id)
    session, project, org = instances(_RUN_TABLES, rows[0])
    session.project, session.org = project, org
    return session


@dataclass
class StepState:
    session_rules: list
    project_rules: list | dict
    messages: list[Message]  # oldest first
    parts: dict[str, list[dict]]  # of every message not in `settled`, in part order (possibly empty)


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def step_state(session: Session, settled: list[str]) -> StepState:
    """The session as a step starts. Messages are Message instances with id, role, data and `session`
    (the caller's instance, so that writing to a message never loads its session again)."""
    rows = run(_STEP_STATE, [settled, session.pk])
    if not rows:
        raise Session.DoesNotExist(session.pk)
    session_rules, project_rules, message_rows, part_rows = rows[0]
    messages = []
    for message_id, role, data in _json(message_rows):
        message = Message(id=message_id, session=session, role=role, data=data)
        message._state.adding, message._state.db = False, "default"  # a row from the database
        messages.append(message)
    # Every message not settled, with its parts in order (an empty list for a message with none).
    parts: dict[str, list[dict]] = dict(_json(part_rows))
    return StepState(_json(session_rules), _json(project_rules), messages, parts)


def message_parts(session_id: str, message_ids: list[str]) -> dict[str, list[dict]]:
    """The parts of these messages (each list in part order), by message id; every id is a key."""
    parts: dict[str, list[dict]] = {message_id: [] for message_id in message_ids}
    if message_ids:
        for message_id, data in run(_PARTS, [session_id, message_ids]):
            parts[message_id].append(json.loads(data))
    return parts
