"""Asking a worker to fan an event out or to deliver one webhook: the tasks are sent by name (as
hangar.engine.session.enqueue does for runs), so the event sink (outbound.py) and the services import nothing of the
task module, which imports them."""

from __future__ import annotations

from typing import Any

from hangar.integrations.queue import DELIVER_TASK, QUEUE, WEBHOOKS_QUEUE

FANOUT_TASK = "hangar.integrations.webhooks.fanout"


def _send(name: str, args: list[Any], queue: str, countdown: float | None = None) -> None:
    from hangar.celery import app

    if app.conf.task_always_eager:
        app.loader.import_default_modules()  # the task's module registers it
        app.tasks[name].apply(args=args)
        return
    app.send_task(name, args=args, queue=queue, countdown=countdown, ignore_result=True)


def enqueue_fanout(session_id: str, event_ids: list[int]) -> None:
    _send(FANOUT_TASK, [session_id, event_ids], QUEUE)


def enqueue_delivery(delivery_id: int, manual: bool = False, countdown: float | None = None) -> None:
    """On the deliveries' own queue: they wait on other people's servers."""
    _send(DELIVER_TASK, [delivery_id, manual], WEBHOOKS_QUEUE, countdown)
