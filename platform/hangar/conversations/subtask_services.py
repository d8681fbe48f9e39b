"""Writes for the `task` tool's child sessions (hangar.engine.session.subtasks): who a child spends as, and the
run requests that start a child, wake its parent and stop its own children. Each runs inside the
caller's transaction; the enqueue after commit is the caller's."""

from __future__ import annotations

from typing import Any

from hangar.conversations.models import Session


def child_prompter_set(*, child: Session, prompter_id: int) -> None:
    """The child spends its parent's prompter's credential."""
    Session.objects.filter(pk=child.pk).update(prompter_id=prompter_id)
    child.prompter_id = prompter_id


def child_run_request(*, child: Session, agent: str, model: dict[str, Any]) -> None:
    Session.objects.filter(pk=child.pk).update(run_requested=True, agent=agent, model=model)


def parent_run_request(parent_id: str) -> bool:
    """Ask a parent still busy for a run; False when it is idle (aborted or finished: nothing waits)."""
    return bool(Session.objects.filter(pk=parent_id).exclude(status="idle").update(run_requested=True))


def children_abort_request(session_id: str) -> list[str]:
    """Ask every running child of `session_id` to stop; returns the ids asked."""
    ids = list(
        Session.objects.filter(parent_id=session_id).exclude(status="idle").values_list("id", flat=True)
    )
    if ids:
        Session.objects.filter(pk__in=ids).update(abort_requested=True, run_requested=True)
    return ids
