"""Child sessions run by the `task` tool (seed 000 §2.4, §3.4): how a child starts, how its end wakes
its parent, how an abort reaches it, and whose workspace it works in.

A child is a session of its own (its parent's id, its own history, rules, cost and run): its prompt is
stored and its run enqueued as any prompt's. The parent's task call parks meanwhile (ChildRunning), so no
worker waits for a child; a child's run that ends (idle, whatever the outcome, a crash included) asks for
its parent's run in the same transaction, and the parent's waiting call reads the child's answer.
A child works in its root session's workspace (one sandbox per tree of sessions), as OpenCode's
subagents work in the project directory of the session that called them.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from hangar.accounts.actors import system_actor
from hangar.conversations import services as store
from hangar.conversations import subtask_services
from hangar.conversations.models import Session
from hangar.conversations.subtask_selectors import session_with_project
from hangar.engine.session.enqueue import enqueue_run

MAX_DEPTH = 8  # how far `workspace_session` walks up (a task's task's task...): bounded, never a cycle


def child_permission(agent_rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The child session's own rules (OpenCode's task tool): no todo tools (the list is the parent's), and
    no tasks of its own unless its agent's rules say something about `task`."""
    rules = [
        {"permission": "todowrite", "pattern": "*", "action": "deny"},
        {"permission": "todoread", "pattern": "*", "action": "deny"},
    ]
    if not any(rule.get("permission") == "task" for rule in agent_rules):
        rules.append({"permission": "task", "pattern": "*", "action": "deny"})
    return rules


def child_create(
    *, parent: Session, title: str, agent: str, agent_rules: list[dict[str, Any]], model: dict[str, Any]
) -> Session:
    """A new child session of `parent` (created by the system on the parent's behalf: the parent's prompter
    is the child's, so the child spends the same credential)."""
    with transaction.atomic():
        child = store.session_create(
            actor=system_actor(parent.org_id, label="task"),
            project=parent.project,
            title=title[:200],
            parent=parent,
            agent=agent,
            model=model,
            permission=child_permission(agent_rules),
            source=parent.source,  # what started the root run: the headless ask policy reads it
        )
        if parent.prompter_id:
            subtask_services.child_prompter_set(child=child, prompter_id=parent.prompter_id)
    return child


def child_prompt(*, child: Session, prompt: str, agent: str, model: dict[str, Any]) -> str:
    """Store the task's prompt as the child's next user message and start (or feed) its run. Returns the
    message's id."""
    with transaction.atomic():
        message = store.message_create(
            session=child,
            data={"role": "user", "time": {"created": store.now_ms()}, "agent": agent, "model": model},
            parts=[{"type": "text", "text": prompt}],
        )
        if child.status == "idle":
            store.session_status_set(session=child, status="busy")
        subtask_services.child_run_request(child=child, agent=agent, model=model)
        transaction.on_commit(lambda: enqueue_run(child.pk))
    return message.pk


def wake_parent(session: Session) -> None:
    """`session` (a child) has ended its run: its parent's waiting task call can read the answer. Asked
    only of a parent still busy (an aborted or finished parent waits for nothing); inside the caller's
    transaction, so the child's idle status and the parent's run request commit together (a run request
    whose enqueue is lost is recovered: hangar.engine.tasks.recover_expired_runs)."""
    parent_id = session.parent_id
    if parent_id and subtask_services.parent_run_request(parent_id):
        transaction.on_commit(lambda: enqueue_run(parent_id))


def children_abort(session_id: str) -> None:
    """Ask every running child of `session_id` to stop (each aborted child does the same for its own)."""
    with transaction.atomic():
        ids = subtask_services.children_abort_request(session_id)
        if ids:
            transaction.on_commit(lambda: _enqueue_all(ids))


def _enqueue_all(session_ids: list[str]) -> None:
    for session_id in session_ids:
        enqueue_run(session_id)


def workspace_session(session: Session) -> Session:
    """The session whose sandbox `session` works in: its root ancestor (itself when it has no parent)."""
    root = session
    for _ in range(MAX_DEPTH):
        if not root.parent_id:
            return root
        root = session_with_project(root.parent_id)
    return root
