"""What a Slack thread shows of its session's run: ONE status message per run, edited in place
(chat.update) at most once per THROTTLE_S (current tool, todos, cost, a link to the web app); a summary
that mentions the requester when the run ends; permission requests and the agent's questions as buttons.
An ask the project's headless policy routes to named approvers (any session, whatever started it) is also
sent to each of them who linked their Slack user, as a direct message with the same buttons.

`on_events` is the store's event sink: it runs in the agent step, so for sessions that are not Slack
threads it costs a look at the session row the step already holds (`source`), and for Slack threads a
Redis SETNX that lets through one status task per window; the Slack calls happen in Celery tasks
(tasks.py, which word them with texts.py)."""

from functools import partial

from django.core.cache import cache
from django.db import transaction

from hangar.conversations.models import Event, Session

THROTTLE_S = 2  # seconds (whole: a Redis expiry); Slack allows about one chat.update per second per channel


def _progress(event: Event) -> bool:
    if event.type == "todo.updated":
        return True
    return event.type == "message.part.updated" and (event.payload.get("part") or {}).get("type") == "tool"


def _routed(session: Session) -> bool:
    """Whether the session's asks are routed to named approvers (the headless ask policy for its trigger):
    read from the project the step already holds."""
    from hangar.engine.agents.headless import trigger_of
    from hangar.projects.headless import policy_for

    return policy_for(session.project.headless_policy, trigger_of(session))["mode"] == "route"


def on_events(session: Session, events: list[Event]) -> None:
    kinds = [
        e for e in events if e.type in ("session.idle", "permission.asked", "question.asked") or _progress(e)
    ]
    if not kinds:
        return
    from hangar.integrations.slack import tasks

    if any(e.type == "permission.asked" for e in kinds) and _routed(session):
        for event in kinds:
            if event.type == "permission.asked":  # a DM with buttons to each approver linked to Slack
                transaction.on_commit(partial(tasks.slack_route.delay, event.payload["id"]), robust=True)
    if session.source != "slack":
        return

    for event in kinds:
        if event.type == "session.idle":
            transaction.on_commit(lambda: tasks.slack_finish.delay(session.pk), robust=True)
        elif event.type == "permission.asked":
            request_id = event.payload["id"]
            transaction.on_commit(partial(tasks.slack_permission.delay, request_id), robust=True)
        elif event.type == "question.asked":
            request_id = event.payload["id"]
            transaction.on_commit(partial(tasks.slack_question.delay, request_id), robust=True)
        elif cache.add(f"slack:status:{session.pk}", 1, timeout=THROTTLE_S):
            transaction.on_commit(
                lambda: tasks.slack_status.apply_async(args=[session.pk], countdown=THROTTLE_S), robust=True
            )
