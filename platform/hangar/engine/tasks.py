"""Celery tasks of the engine. Each takes ids and calls one function; the lease (not acks_late) owns
long runs. The queue is `HANGAR_ENGINE_QUEUE` (default "celery"), so tests can isolate their worker."""

from __future__ import annotations

import os

import structlog
from celery import current_app, shared_task
from celery.signals import worker_init
from django.db import close_old_connections, connection
from django.utils import timezone

ENGINE_QUEUE = os.environ.get("HANGAR_ENGINE_QUEUE", "celery")
# Routes, not the deprecated task `queue` attribute; beat (which sends recover/reap) honours them too.
current_app.conf.task_routes = {
    **(current_app.conf.task_routes or {}),
    "hangar.engine.*": {"queue": ENGINE_QUEUE},
}


@worker_init.connect
def warm_up_worker(**_kwargs) -> None:
    """Load once, before the worker takes tasks, what a first step would otherwise load: LiteLLM (~3.5 s,
    ~170 MB, and what it loads lazily), the engine modules imported at first use, and every tool's JSON
    schema. Done lazily, a burst of sessions right after a start paid for it in every thread at once
    (`functools.cache` does not stop 100 threads computing the same schemas). Web processes never
    import LiteLLM."""
    from hangar.engine import runner, toolrun  # noqa: F401  (the loop and everything it imports)
    from hangar.engine.providers import openai_compat, resolve  # noqa: F401
    from hangar.engine.providers.litellm_model import warm_up
    from hangar.engine.tools import runner as tool_runner  # noqa: F401
    from hangar.engine.tools.registry import ALL, tool_schemas
    from hangar.heap import freeze_start_up_heap
    from hangar.projects import credentials  # noqa: F401

    warm_up()
    tool_schemas(ALL)
    freeze_start_up_heap()  # last: what was loaded above is never walked by a full collection again


@shared_task(name="hangar.engine.run_session", ignore_result=True)
def run_session(session_id: str) -> bool:
    from hangar.engine.runner import run_session_once

    # Every log line of this run carries the session (threads pool: contextvars are per thread).
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(session=session_id, task="run_session")
    try:
        return run_session_once(session_id)
    finally:
        connection.close()
        structlog.contextvars.clear_contextvars()


@shared_task(name="hangar.engine.recover_expired_runs", ignore_result=True)
def recover_expired_runs() -> int:
    """Sessions whose runner died (lease expired) or whose run request was lost get a new run."""
    from hangar.conversations.models import Session
    from hangar.engine.services import enqueue_run

    close_old_connections()
    now = timezone.now()
    expired = list(
        Session.objects.filter(lease_expires_at__lt=now).exclude(lease_owner="").values_list("id", flat=True)
    )
    stale = list(
        Session.objects.filter(
            run_requested=True, lease_owner="", updated_at__lt=now - timezone.timedelta(seconds=30)
        ).values_list("id", flat=True)
    )
    for session_id in dict.fromkeys(expired + stale):
        enqueue_run(session_id)
    return len(expired) + len(stale)


@shared_task(name="hangar.engine.reap_sandboxes", ignore_result=True)
def reap_sandboxes() -> dict:
    from hangar.conversations.models import Session
    from hangar.engine.sandboxes import manager
    from sandbox.reaper import Reaper

    def is_session_alive(session_id: str) -> bool:
        return Session.objects.filter(pk=session_id, archived_at__isnull=True).exists()

    report = Reaper(manager(), is_session_alive).run_once()
    return getattr(report, "__dict__", {})
