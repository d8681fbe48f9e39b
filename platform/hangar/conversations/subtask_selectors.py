"""Reads for the `task` tool (hangar.engine.tools.task): a parent session's children and how a child's
turn ended. Not scoped to an actor, like the other reads of the runner (loop_selectors): the lease is the
authority and every id is checked against the parent session the run holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hangar.conversations.models import Message, Part, Session


def child_of(parent_id: str, child_id: str) -> Session | None:
    """`child_id` if it is a child of `parent_id` (a task may resume only its own session's children)."""
    return Session.objects.select_related("project", "org").filter(pk=child_id, parent_id=parent_id).first()


def session_with_project(session_id: str) -> Session:
    return Session.objects.select_related("project", "org").get(pk=session_id)


def message_model(message_id: str) -> dict[str, str] | None:
    """The model an assistant message was made by (or, for a subtask's step, chosen for): the child's."""
    data = Message.objects.filter(pk=message_id).values_list("data", flat=True).first()
    if not data or not data.get("modelID"):
        return None
    return {"providerID": data.get("providerID", ""), "modelID": data["modelID"]}


@dataclass(frozen=True)
class ChildOutcome:
    """Where a child session's turn stands: `running` until it is idle; then its last answer's text and
    error (OpenCode's task returns the last text part of the child's final assistant message)."""

    running: bool
    answered: bool = False
    text: str = ""
    error: dict[str, Any] | None = None


def child_outcome(child_id: str) -> ChildOutcome:
    child = Session.objects.filter(pk=child_id).values("status", "run_requested").first()
    if child is None:
        return ChildOutcome(running=False)
    if child["status"] != "idle" or child["run_requested"]:
        return ChildOutcome(running=True)
    last_user = (
        Message.objects.filter(session_id=child_id, role="user").order_by("-id").values_list("id", flat=True)
    ).first()
    answer = (
        Message.objects.filter(session_id=child_id, role="assistant", id__gt=last_user or "")
        .order_by("-id")
        .first()
    )
    if answer is None:
        return ChildOutcome(running=False)
    texts = [
        p.data.get("text", "")
        for p in Part.objects.filter(message=answer, type="text").order_by("id")
        if not p.data.get("synthetic")
    ]
    return ChildOutcome(
        running=False, answered=True, text=texts[-1] if texts else "", error=answer.data.get("error")
    )
