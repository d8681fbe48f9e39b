"""Writes to the conversation store. Each function is atomic, validates OpenCode payloads with the
pydantic schemas, and publishes the matching OpenCode event (hangar.conversations.events) in the same
transaction. Session lifecycle services that people call (create, rename, archive, delete) audit too;
the engine's per-step writes (parts, messages) are not audited row by row: the prompt that caused them is.
Permission requests are permission_services', a run's own audit rows run_audit_services'.
"""

import json
import time
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations import jsonsafe, schemas
from hangar.conversations.events import publish, publish_many
from hangar.conversations.models import Message, Part, Session, Todo
from hangar.ids import new_part_id

# A session keeps this prefix until the hidden title agent (hangar.engine.run.titles) or a person names it.
DEFAULT_TITLE_PREFIX = "New session - "
REVERT_KEYS = ("messageID", "partID", "snapshot", "diff")


def now_ms() -> int:
    return int(time.time() * 1000)


# --- messages and parts (engine-facing) ---------------------------------------------------------


# The three engine-facing writes below are each ONE statement: the row write rides in the event append
# as a data-modifying CTE (hangar.conversations.events.publish_many), so row, seq bump and event commit or
# fail together without BEGIN/SAVEPOINT round trips. A part upsert is INSERT ... ON CONFLICT DO UPDATE
# (the old update_or_create was SELECT FOR UPDATE + INSERT/UPDATE inside two savepoints).

_MESSAGE_INSERT = (
    "INSERT INTO conversations_message (id, session_id, role, data, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s::jsonb, now(), now()) RETURNING 1"
)
MESSAGE_UPDATE = (
    "UPDATE conversations_message SET data = %s::jsonb, updated_at = now() WHERE id = %s RETURNING 1"
)
_PART_UPSERT = (
    "INSERT INTO conversations_part (id, session_id, message_id, type, data, created_at, updated_at)"
    " VALUES (%s, %s, %s, %s, %s::jsonb, now(), now())"
    " ON CONFLICT (id) DO UPDATE SET session_id = EXCLUDED.session_id, message_id = EXCLUDED.message_id,"
    " type = EXCLUDED.type, data = EXCLUDED.data, updated_at = EXCLUDED.updated_at RETURNING 1"
)


def _persisted(obj, now):
    """Mark an instance written by raw SQL as saved, so a later .save() updates rather than inserts."""
    obj._state.adding, obj._state.db = False, "default"
    obj.created_at = obj.updated_at = now
    return obj


def _part_write(message: Message, data: dict) -> tuple[dict, tuple[str, list]]:
    """A part validated for `message` (id filled in if absent) and its upsert statement."""
    data = {**data, "sessionID": message.session_id, "messageID": message.pk}
    if not data.get("id"):
        data["id"] = new_part_id()
    # A NUL or lone surrogate: jsonb refuses it; stored (and sent on) as U+FFFD.
    data, text = jsonsafe.cleaned(schemas.validate_part(data))
    return data, (_PART_UPSERT, [data["id"], message.session_id, message.pk, data["type"], text])


def message_create(*, session: Session, data: dict, parts: Sequence[dict] = ()) -> Message:
    """Store a new user or assistant message (OpenCode shape; id/sessionID filled in if absent), with its
    first `parts` if given (a step's step-start), in one statement."""
    message = Message(session=session)
    data = {**data, "id": data.get("id") or message.id, "sessionID": session.pk}
    message.id = data["id"]
    data, text = jsonsafe.cleaned(schemas.validate_message(data))
    message.role = data["role"]
    message.data = data
    written = [_part_write(message, part) for part in parts]
    publish_many(
        session,
        [("message.updated", {"info": data})] + [("message.part.updated", {"part": p}) for p, _ in written],
        with_writes=[(_MESSAGE_INSERT, [message.id, session.pk, message.role, text])]
        + [w for _, w in written],
    )
    return _persisted(message, timezone.now())


def message_update(*, message: Message, data: dict) -> Message:
    return parts_upsert(message=message, parts=[], message_data=data)[1]


def part_upsert(*, message: Message, data: dict, delta: str | None = None) -> Part:
    """Create or replace one part (persisted at part boundaries, not per token)."""
    data, write = _part_write(message, data)
    payload = {"part": data} if delta is None else {"part": data, "delta": delta}
    publish(message.session, "message.part.updated", payload, with_write=write)
    part = Part(id=data["id"], session_id=message.session_id, message=message, type=data["type"], data=data)
    return _persisted(part, timezone.now())


def parts_upsert(
    *,
    message: Message,
    parts: list[dict],
    message_data: dict | None = None,
    usage: tuple[float, dict] | None = None,
    ledger: list[tuple[str, list]] | tuple = (),
) -> tuple[list[dict], Message]:
    """Create or replace several parts of `message`, then optionally replace the message's data and set
    the session's usage totals (`usage` = (cost to add, new token totals)): one statement, one event per
    row, in that order (a step's closing parts, then its completed message). `ledger` = the model call's
    ledger writes (hangar.usage.ledger_services.ledger_writes), so the call is recorded in the statement
    that adds its cost to the session. Returns the parts as stored."""
    written = [_part_write(message, part) for part in parts]
    events = [("message.part.updated", {"part": p}) for p, _ in written]
    writes = [w for _, w in written]
    if message_data is not None:
        message_data, text = jsonsafe.cleaned(
            schemas.validate_message({**message_data, "id": message.pk, "sessionID": message.session_id})
        )
        events.append(("message.updated", {"info": message_data}))
        writes.append((MESSAGE_UPDATE, [text, message.pk]))
    writes.extend(ledger)
    session_set = (
        ("cost = cost + %s, tokens = %s::jsonb", [usage[0], json.dumps(usage[1])]) if usage else None
    )
    try:
        publish_many(message.session, events, with_writes=writes, session_set=session_set)
    except LookupError:
        raise Message.DoesNotExist(message.pk) from None
    if message_data is not None:
        message.data = message_data
    return [p for p, _ in written], message


def todos_replace(*, session: Session, todos: list[dict]) -> list[Todo]:
    """Replace the session's todo list wholesale (OpenCode's todowrite semantics)."""
    items = [schemas.TodoItem.model_validate(todo) for todo in todos]
    with transaction.atomic():
        Todo.objects.filter(session=session).delete()
        rows = Todo.objects.bulk_create(
            [Todo(session=session, position=i, **item.model_dump()) for i, item in enumerate(items)]
        )
        publish(session, "todo.updated", {"sessionID": session.pk, "todos": [i.model_dump() for i in items]})
    return rows


# --- session lifecycle (people-facing, audited) -------------------------------------------------


def session_info(session: Session) -> dict:
    """OpenCode's Session JSON shape (see the OpenAPI `Session` schema)."""
    info: dict[str, Any] = {
        "id": session.pk,
        "slug": session.slug or session.pk[-8:].lower(),
        "projectID": str(session.project_id),
        "directory": "/workspace",
        "title": session.title,
        "version": "hangar-0.1.0",
        "time": {
            "created": int(session.created_at.timestamp() * 1000),
            "updated": int(session.updated_at.timestamp() * 1000),
        },
    }
    if session.parent_id:
        info["parentID"] = session.parent_id
    if session.agent:
        info["agent"] = session.agent
    if session.model.get("providerID") and session.model.get("modelID"):
        info["model"] = {"id": session.model["modelID"], "providerID": session.model["providerID"]}
    if session.summary:
        info["summary"] = session.summary
    if session.share:
        info["share"] = session.share
    if session.revert:
        # OpenCode's keys only: the stored mark also holds how far the revert reached (revert_services).
        info["revert"] = {k: v for k, v in session.revert.items() if k in REVERT_KEYS}
    if session.permission:
        info["permission"] = session.permission
    if session.archived_at:
        info["time"]["archived"] = int(session.archived_at.timestamp() * 1000)
    if session.compacting_at:
        info["time"]["compacting"] = int(session.compacting_at.timestamp() * 1000)
    return info


def session_create(
    *,
    actor: Actor,
    project,
    title: str = "",
    parent: Session | None = None,
    agent: str | None = None,
    model: dict | None = None,
    permission: list | None = None,
    source: str = "",
) -> Session:
    if parent is not None and parent.project_id != project.pk:
        raise ValueError("a child session belongs to its parent's project")
    with transaction.atomic():
        session = Session(
            org_id=project.org_id,
            project=project,
            creator=actor.user,
            parent=parent,
            title=title or f"{DEFAULT_TITLE_PREFIX}{time.strftime('%Y-%m-%dT%H:%M:%S')}",
            agent=agent or project.default_agent,
            model=model or _project_model(project),
            permission=permission or [],
            source=source,
        )
        session.save(force_insert=True)
        audit_record(actor=actor, action="session.create", target=session, data={"project": project.pk})
        publish(
            session,
            "session.created",
            {"sessionID": session.pk, "info": session_info(session)},
            org_wide=True,
        )
    return session


def session_status_set(*, session: Session, status: str, detail: dict | None = None) -> None:
    """Set idle/busy/retry/error and publish OpenCode's session.status (and session.idle when idle): one
    statement, the status columns set by the same UPDATE that takes the events' seqs."""
    detail = detail or {}
    events = [("session.status", {"sessionID": session.pk, "status": {"type": status, **detail}})]
    if status == "idle":
        events.append(("session.idle", {"sessionID": session.pk}))
    publish_many(
        session,
        events,
        org_wide=True,
        session_set=("status = %s, status_detail = %s::jsonb", [status, json.dumps(detail)]),
    )
    session.status, session.status_detail = status, detail


def _project_model(project) -> dict:
    provider, _, model = (project.default_model or "").partition("/")
    return {"providerID": provider, "modelID": model} if model else {}
