"""Writes for the session's file history (seed 000 §11, seed 003 "Fork, Revert, and Undo"): the diff
summary of a session and of a prompt, a revert marked and cleared, the reverted messages removed when the
next prompt arrives, and a fork's copy of the history. The file work itself (snapshots, restores) is the
engine's (hangar.engine.revert); these only store what it found. People's actions are audited here."""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations import schemas
from hangar.conversations import services as store
from hangar.conversations.events import publish, publish_many
from hangar.conversations.models import Message, Part, Session
from hangar.ids import new_message_id, new_part_id

# The stored revert mark also names the newest message when the revert was made: what the cleanup may remove.
THROUGH = "throughMessageID"
MAX_DIFF_FILES = 500  # files kept in a stored diff (and a session.diff event)
MAX_PATCHES_CHARS = 1 << 20  # patch text kept in one; the files past it keep their counts only


def bounded(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A diff as stored and told: at most MAX_DIFF_FILES files, and patches while their total stays within
    MAX_PATCHES_CHARS (a file past it is listed with its counts, without its patch)."""
    kept, room = [], MAX_PATCHES_CHARS
    for diff in diffs[:MAX_DIFF_FILES]:
        patch = diff.get("patch") or ""
        if len(patch) > room:
            diff = {k: v for k, v in diff.items() if k != "patch"}
        room -= len(diff.get("patch") or "")
        kept.append(diff)
    return kept


def diff_counts(diffs: list[dict[str, Any]]) -> dict[str, int]:
    """OpenCode's Session.summary: totals over the files."""
    return {
        "additions": sum(int(d.get("additions", 0)) for d in diffs),
        "deletions": sum(int(d.get("deletions", 0)) for d in diffs),
        "files": len(diffs),
    }


def _without_patch(diffs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in d.items() if k != "patch"} for d in diffs]


def _locked(session: Session) -> Session:
    return Session.objects.select_for_update().get(pk=session.pk)


def _updated_events(session: Session, diffs: list[dict[str, Any]]) -> list[tuple[str, dict]]:
    return [
        ("session.updated", {"sessionID": session.pk, "info": store.session_info(session)}),
        ("session.diff", {"sessionID": session.pk, "diff": diffs}),
    ]


_DIFF_UPSERT = (
    "INSERT INTO conversations_sessiondiff (session_id, diffs, updated_at) VALUES (%s, %s::jsonb, now())"
    " ON CONFLICT (session_id) DO UPDATE SET diffs = EXCLUDED.diffs, updated_at = now() RETURNING 1"
)


def _diff_write(session: Session, diffs: list[dict[str, Any]]) -> tuple[str, list]:
    return _DIFF_UPSERT, [session.pk, json.dumps(diffs)]


def diff_summary_set(
    *,
    session: Session,
    diffs: list[dict[str, Any]],
    message_id: str | None = None,
    message_diffs: list[dict[str, Any]] | None = None,
) -> None:
    """The session's diff (its first snapshot to its last) and, for `message_id` (a user message), the
    diff of what answering it changed: stored, counted on the session, told as `session.diff`, in one
    statement after two reads. The message keeps its files' counts only (its `summary.diffs` without
    patches: every step reads the messages)."""
    diffs = bounded(diffs)
    with transaction.atomic():
        session = _locked(session)
        session.summary = diff_counts(diffs)
        events = _updated_events(session, diffs)
        writes = [_diff_write(session, diffs)]
        message = None
        if message_id and message_diffs is not None:
            message = Message.objects.filter(session=session, pk=message_id, role="user").first()
        if message is not None:
            summary = {**(message.data.get("summary") or {}), "diffs": _without_patch(message_diffs or [])}
            data = schemas.validate_message({**message.data, "summary": summary})
            events.append(("message.updated", {"info": data}))
            writes.append((store.MESSAGE_UPDATE, [json.dumps(data), message.pk]))
        publish_many(
            session,
            events,
            org_wide=True,
            with_writes=writes,
            session_set=("summary = %s::jsonb", [json.dumps(session.summary)]),
        )


def session_revert_mark(
    *, actor: Actor, session: Session, revert: dict[str, Any], diffs: list[dict[str, Any]]
) -> Session:
    """The session is reverted to `revert` ({messageID, partID?, snapshot?, diff?}): its files were restored;
    the messages from there on stay until the next prompt (or an unrevert) decides."""
    diffs = bounded(diffs)
    with transaction.atomic():
        session = _locked(session)
        newest = Message.objects.filter(session=session).order_by("-id").values_list("id", flat=True).first()
        revert = {**revert, THROUGH: newest or revert["messageID"]}
        session.revert, session.summary = revert, diff_counts(diffs)
        publish_many(
            session,
            _updated_events(session, diffs),
            org_wide=True,
            with_writes=[_diff_write(session, diffs)],
            session_set=(
                "revert = %s::jsonb, summary = %s::jsonb",
                [json.dumps(revert), json.dumps(session.summary)],
            ),
        )
        audit_record(
            actor=actor,
            action="session.revert",
            target=session,
            data={
                "messageID": revert["messageID"],
                "partID": revert.get("partID"),
                "files": len(diffs),
            },
        )
    return session


def session_revert_clear(
    *, actor: Actor, session: Session, diffs: list[dict[str, Any]] | None = None
) -> Session:
    """Unrevert: the files are back as they were before the revert; the revert mark goes."""
    with transaction.atomic():
        session = _locked(session)
        previous, session.revert = session.revert, None
        writes = []
        if diffs is not None:
            diffs = bounded(diffs)
            session.summary = diff_counts(diffs)
            writes.append(_diff_write(session, diffs))
            events = _updated_events(session, diffs)
        else:
            events = _updated_events(session, [])[:1]
        publish_many(
            session,
            events,
            org_wide=True,
            with_writes=writes,
            session_set=("revert = NULL, summary = %s::jsonb", [json.dumps(session.summary)]),
        )
        audit_record(
            actor=actor,
            action="session.unrevert",
            target=session,
            data={"messageID": (previous or {}).get("messageID")},
        )
    return session


def revert_cleanup(session: Session) -> None:
    """The next prompt after a revert (in its transaction), or the run it starts if it raced the revert: the
    reverted messages go for good, as in OpenCode's cleanup: from the revert's message on (through the
    newest when the revert was made); with a part, that message stays and loses its parts from that part
    on. The revert mark goes with them."""
    with transaction.atomic():
        locked = _locked(session)
        revert = locked.revert
        session.revert = locked.revert = None
        if not revert:
            return
        message_id, part_id = revert["messageID"], revert.get("partID")
        doomed = Message.objects.filter(session=locked, pk__gte=message_id)
        if revert.get(THROUGH):  # a prompt that raced the revert (stored after it) is not reverted
            doomed = doomed.filter(pk__lte=revert[THROUGH])
        parts: list[tuple[str, str]] = []
        if part_id:
            doomed = doomed.exclude(pk=message_id)
            parts = list(
                Part.objects.filter(session=locked, message_id=message_id, pk__gte=part_id).values_list(
                    "message_id", "pk"
                )
            )
        removed = list(doomed.values_list("pk", flat=True))
        events: list[tuple[str, dict]] = [
            ("message.removed", {"sessionID": locked.pk, "messageID": pk}) for pk in removed
        ]
        events += [
            ("message.part.removed", {"sessionID": locked.pk, "messageID": mid, "partID": pk})
            for mid, pk in parts
        ]
        Part.objects.filter(pk__in=[pk for _, pk in parts]).delete()
        doomed.delete()
        events.append(("session.updated", {"sessionID": locked.pk, "info": store.session_info(locked)}))
        publish_many(locked, events, org_wide=True, session_set=("revert = NULL", []))


def forked_title(title: str) -> str:
    """OpenCode's fork title: "<title> (fork #1)", counting on from an earlier fork's number."""
    match = re.fullmatch(r"(.*) \(fork #(\d+)\)", title)
    base, number = (match.group(1), int(match.group(2)) + 1) if match else (title, 1)
    return f"{base} (fork #{number})"[:200]


def _remapped(value: Any, ids: dict[str, str]) -> Any:
    return ids.get(value, value) if isinstance(value, str) else value


def session_fork_create(
    *, actor: Actor, source: Session, before_message_id: str | None, file_point: str | None
) -> Session:
    """A new session holding `source`'s messages before `before_message_id` (all, if None), each message
    and part under a new id, assistants' `parentID` and compactions' tail remapped (seed 003 "Fork").
    Audited (`session.fork`, with where it came from); `session.created` tells the org's lists."""
    with transaction.atomic():
        forked = store.session_create(
            actor=actor,
            project=source.project,
            title=forked_title(source.title),
            agent=source.agent,
            model=dict(source.model) or None,
            permission=list(source.permission),
        )
        messages = Message.objects.filter(session=source).order_by("id")
        if before_message_id:
            messages = messages.filter(pk__lt=before_message_id)
        rows = list(messages)
        ids = {m.pk: new_message_id() for m in rows}  # ascending in the old order: the order is kept
        new_messages = []
        for m in rows:
            data = {**m.data, "id": ids[m.pk], "sessionID": forked.pk}
            if "parentID" in data:
                data["parentID"] = _remapped(data["parentID"], ids)
            new_messages.append(Message(id=ids[m.pk], session=forked, role=m.role, data=data))
        Message.objects.bulk_create(new_messages)
        new_parts = []
        for part in Part.objects.filter(session=source, message_id__in=list(ids)).order_by("id"):
            pk = new_part_id()
            data = {**part.data, "id": pk, "sessionID": forked.pk, "messageID": ids[part.message_id]}
            if data.get("tail_start_id"):
                data["tail_start_id"] = _remapped(data["tail_start_id"], ids)
            new_parts.append(
                Part(id=pk, session=forked, message_id=ids[part.message_id], type=part.type, data=data)
            )
        Part.objects.bulk_create(new_parts, batch_size=500)
        audit_record(
            actor=actor,
            action="session.fork",
            target=forked,
            data={
                "source": source.pk,
                "messageID": before_message_id,
                "messages": len(new_messages),
                "files_from": file_point,
            },
        )
    return forked


def session_fork_failed(*, session: Session, message: str) -> None:
    """The fork's files could not be copied: the new session says so (its history is there)."""
    publish(
        session,
        "session.error",
        {"sessionID": session.pk, "error": {"name": "UnknownError", "data": {"message": message}}},
    )
