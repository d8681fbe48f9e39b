"""Reads for the session's runner, the worker that holds its lease (hangar.engine.leases).

Not scoped to an actor: no person is asking, the lease is the authority, and the session id came from
the run the platform itself enqueued. The loop re-reads its state at every step (seed 000 §3.2), so
these are its per-step reads: fixed statements, prepared (hangar.conversations.sql), no ORM query
building, rows turned into the few fields the loop uses.
"""

from __future__ import annotations

import json

from hangar.conversations.models import Message, Session
from hangar.conversations.sql import run

_MESSAGES = "SELECT id, role, data FROM conversations_message WHERE session_id = %s ORDER BY id"
_PARTS = ("SELECT message_id, data FROM conversations_part WHERE session_id = %s AND message_id = ANY(%s)"
          " ORDER BY id")
_RULES = ("SELECT s.permission, p.permission_rules FROM conversations_session s"
          " JOIN projects_project p ON p.id = s.project_id WHERE s.id = %s")


def session_messages(session: Session) -> list[Message]:
    """The session's messages, oldest first, as Message instances with id, role, data and `session` (the
    caller's instance, so that writing to a message never loads its session again)."""
    messages = []
    for message_id, role, data in run(_MESSAGES, [session.pk]):
        message = Message(id=message_id, session=session, role=role, data=json.loads(data))
        message._state.adding, message._state.db = False, "default"  # a row from the database
        messages.append(message)
    return messages


def message_parts(session_id: str, message_ids: list[str]) -> dict[str, list[dict]]:
    """The parts of these messages (each list in part order), by message id; every id is a key."""
    parts: dict[str, list[dict]] = {message_id: [] for message_id in message_ids}
    if message_ids:
        for message_id, data in run(_PARTS, [session_id, message_ids]):
            parts[message_id].append(json.loads(data))
    return parts


def permission_layers(session_id: str) -> tuple[list, list | dict]:
    """(the session's permission ruleset, its project's permission rules), as stored."""
    rows = run(_RULES, [session_id])
    if not rows:
        raise Session.DoesNotExist(session_id)
    session_rules, project_rules = rows[0]
    return json.loads(session_rules), json.loads(project_rules)
