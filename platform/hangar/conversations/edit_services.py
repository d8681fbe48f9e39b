"""A person's edits of a session's history (OpenCode's message delete, part delete and part update):
each under the session's row lock, refused while a run owns the session (the loop re-reads history at
every step), audited, and published with OpenCode's events (`message.removed`, `message.part.removed`,
`message.part.updated`). A part update may change only what a person wrote: the text of a text part."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Message, Part, Session

MAX_TEXT_CHARS = 200_000
EDITABLE_TYPES = frozenset({"text"})


class SessionBusyError(Exception):
    """A run owns the session: its history may not change under it."""


class PartEditRefused(ValueError):
    """The body cannot replace this part (message says why; `field` names the offending field)."""

    def __init__(self, message: str, field: str):
        super().__init__(message)
        self.field = field


def _locked_idle(session: Session) -> Session:
    locked = Session.objects.select_for_update().get(pk=session.pk)
    if locked.status != "idle" or locked.run_requested or locked.lease_owner:
        raise SessionBusyError(session.pk)
    return locked


def message_remove(*, actor: Actor, session: Session, message_id: str) -> None:
    """Delete one message and its parts. Message.DoesNotExist when the session holds no such message."""
    with transaction.atomic():
        locked = _locked_idle(session)
        message = Message.objects.select_for_update().get(session=locked, pk=message_id)
        parts = Part.objects.filter(message=message).count()
        audit_record(
            actor=actor,
            action="session.message.delete",
            target=locked,
            data={"message": message.pk, "role": message.role, "parts": parts},
        )
        message.delete()
        publish(locked, "message.removed", {"sessionID": locked.pk, "messageID": message_id})


def part_remove(*, actor: Actor, session: Session, message_id: str, part_id: str) -> None:
    """Delete one part of one message. Part.DoesNotExist when it is not there."""
    with transaction.atomic():
        locked = _locked_idle(session)
        part = Part.objects.select_for_update().get(session=locked, message_id=message_id, pk=part_id)
        audit_record(
            actor=actor,
            action="session.part.delete",
            target=locked,
            data={"message": message_id, "part": part_id, "type": part.type},
        )
        part.delete()
        publish(
            locked,
            "message.part.removed",
            {"sessionID": locked.pk, "messageID": message_id, "partID": part_id},
        )


def part_edit(
    *, actor: Actor, session: Session, message_id: str, part_id: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Replace a text part's text with the body's (OpenCode's Part shape, its ids those of the URL).
    Part.DoesNotExist when it is not there; PartEditRefused for any other change."""
    with transaction.atomic():
        locked = _locked_idle(session)
        part = Part.objects.select_for_update().get(session=locked, message_id=message_id, pk=part_id)
        data = dict(part.data)
        for key, expected in (("id", part_id), ("messageID", message_id), ("sessionID", locked.pk)):
            if body.get(key) != expected:
                raise PartEditRefused(f"{key} must be {expected}, the part's own.", key)
        if body.get("type") != part.type:
            raise PartEditRefused(f"type must stay {part.type}.", "type")
        if part.type not in EDITABLE_TYPES:
            raise PartEditRefused("Only a text part's text may be changed.", "type")
        text = body.get("text")
        if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
            raise PartEditRefused(f"text: a string of at most {MAX_TEXT_CHARS} characters.", "text")
        changed = {k for k in set(body) | set(data) if k != "text" and body.get(k) != data.get(k)}
        if changed:
            raise PartEditRefused(
                f"Only text may change, not {', '.join(sorted(changed))}.", sorted(changed)[0]
            )
        if text == data.get("text"):
            return data
        data["text"] = text
        part.data = data
        part.save(update_fields=["data", "updated_at"])
        audit_record(
            actor=actor,
            action="session.part.update",
            target=locked,
            data={"message": message_id, "part": part_id, "chars": len(text)},
        )
        publish(locked, "message.part.updated", {"part": data})
    return data
