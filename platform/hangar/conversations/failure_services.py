"""What a turn that fails leaves, whatever failed (the model could not be resolved, a budget or the
allow-list stopped it, the sandbox could not be attached, the loop crashed, a provider's error): the
prompt's answer is an assistant message carrying the error in OpenCode's shape, and `session.error` is
published, in one transaction. A reload shows the error where the answer would be, and a client waiting
for the turn's answer (OpenCode's `POST /session/{id}/message`) gets it instead of waiting on.

The engine calls it from one place (hangar.engine.run.failures); the session's status is the caller's.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hangar.conversations.errors import opencode_error
from hangar.conversations.events import publish
from hangar.conversations.loop_selectors import prompt_without_answer
from hangar.conversations.models import Message, Session
from hangar.conversations.services import message_create, now_ms


def failed_answer_data(user: Message, error: dict[str, Any]) -> dict[str, Any]:
    """An assistant message answering `user` with `error` (OpenCode's shape), complete, with no parts."""
    model = user.data.get("model") or {}
    agent = user.data.get("agent") or "build"
    now = now_ms()
    return {
        "role": "assistant",
        "time": {"created": now, "completed": now},
        "parentID": user.pk,
        "modelID": model.get("modelID", ""),
        "providerID": model.get("providerID", ""),
        "mode": agent,
        "agent": agent,
        "path": {"cwd": "/workspace", "root": "/workspace"},
        "error": opencode_error(error),
    }


@transaction.atomic
def turn_failed_record(*, session: Session, error: dict[str, Any]) -> Message | None:
    """Answer the latest prompt with `error` unless an answer already carries one (a step's own provider
    error), and publish `session.error` (Hangar's event keeps the error's own name and data; OpenCode's
    stream shapes it). Returns the message created, if one was."""
    user = prompt_without_answer(session.pk)
    message = None
    if user is not None:
        message = message_create(session=session, data=failed_answer_data(user, error))
    publish(session, "session.error", {"sessionID": session.pk, "error": error})
    return message
