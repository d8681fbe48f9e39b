"""Celery tasks of the engine. Each takes ids and calls one function; the lease (not acks_late) owns
long runs. The queue is `HANGAR_ENGINE_QUEUE` (default "celery"), so tests can isolate their worker."""

from __future__ import annotations

import sys
from typing import Any

import structlog
from celery import current_app, shared_task
from celery.signals import worker_init, worker_ready
from django.db import close_old_connections, connection

from hangar.engine.session.enqueue import PERMISSION_EXPIRE, RUN_SESSION, engine_queue

ENGINE_QUEUE = engine_queue()
# Routes, not the deprecated task `queue` attribute; beat (which sends recover/reap) honours them too.
current_app.conf.task_routes = {
    **(current_app.conf.task_routes or {}),
    "hangar.engine.*": {"queue": ENGINE_QUEUE},
}


@worker_init.connect
def warm_up_worker(sender: Any = None, **_kwargs: object) -> None:
    """Load once, before the worker takes tasks, what a first step would otherwise load: the engine modules
    imported at first use, every tool's JSON schema, and LiteLLM (slow to import, and what it loads
    lazily) when every call goes through it. Done lazily, a burst of sessions right after a start paid for
    it in every thread at once (`functools.cache` does not stop many threads computing the same schemas at
    once). With OpenAI-compatible endpoints called directly (the default), a worker loads LiteLLM before
    its first call that needs it, if any (litellm_model.warm_up). Web processes never import LiteLLM, and
    neither does a sandbox host's service (deploy/run-host.sh): it runs no loop and calls no model, so it
    keeps only the warm pool."""
    from hangar.engine.workspace.sandboxes import allow_warm_pool
    from hangar.heap import freeze_start_up_heap

    allow_warm_pool()  # this process, a worker, keeps the warm pool (never a web process)
    runs_the_loop = not _serves_only_host_queues(sender)
    if runs_the_loop:
        _load_the_loop()
    structlog.get_logger(__name__).info(
        "worker_warmed_up", runs_the_loop=runs_the_loop, litellm_loaded="litellm" in sys.modules
    )
    freeze_start_up_heap()  # last: what was loaded above is never walked by a full collection again


def _serves_only_host_queues(worker: Any) -> bool:
    """Whether this worker consumes nothing but sandbox host queues (host.<name>): a host service."""
    from hangar.engine.workspace.host_names import is_host_queue

    queues = getattr(getattr(getattr(worker, "app", None), "amqp", None), "queues", None)
    names = list(queues.consume_from) if queues is not None else []
    return bool(names) and all(is_host_queue(name) for name in names)


def _load_the_loop() -> None:
    from django.conf import settings

    from hangar.engine.providers import openai_compat, resolve  # noqa: F401
    from hangar.engine.providers.litellm_model import warm_up
    from hangar.engine.tools import execute  # noqa: F401
    from hangar.engine.tools.registry import ALL, tool_schemas
    from hangar.engine.turn import tool_calls  # noqa: F401  (the loop and everything it imports)
    from hangar.projects import credentials  # noqa: F401

    if not settings.HANGAR_DIRECT_OPENAI_COMPAT:  # every call goes through LiteLLM: load it now
        warm_up()
    tool_schemas(ALL)


@worker_ready.connect
def register_sandbox_host(**_kwargs: object) -> None:
    """A worker with Docker owns this host's sandbox root: it registers the host and heart-beats for it
    (hangar.engine.workspace.host_service). An engine worker without Docker (HANGAR_SANDBOX_REMOTE) is no
    host: the host services it sends sandbox work to register themselves."""
    from django.conf import settings

    from hangar.engine.workspace.host_service import start_heartbeat
    from hangar.engine.workspace.sandboxes import manager_without_pool

    if not settings.HANGAR_SANDBOX_REMOTE:
        start_heartbeat(manager_without_pool)


@shared_task(name="hangar.engine.sandbox_hosts_sweep", ignore_result=True)
def sandbox_hosts_sweep() -> dict[str, Any]:
    """Hosts whose heartbeat stopped are lost; the busy sessions on them end their turn (host_loss)."""
    from hangar.engine.run.host_loss import sweep

    close_old_connections()
    return sweep()


@shared_task(name=RUN_SESSION, ignore_result=True)
def run_session(session_id: str) -> bool:
    from hangar.engine.run.worker import run_session_once

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
    from hangar.conversations.loop_selectors import sessions_to_recover
    from hangar.engine.run.fairness import recoverable
    from hangar.engine.session.enqueue import enqueue_run

    close_old_connections()
    sessions = recoverable(sessions_to_recover())  # within each org's free run slots
    for session_id in sessions:
        enqueue_run(session_id)
    return len(sessions)


@shared_task(name="hangar.engine.reap_sandboxes", ignore_result=True)
def reap_sandboxes() -> dict[str, Any]:
    from django.conf import settings

    from hangar.engine.workspace.reaping import reap

    if settings.HANGAR_SANDBOX_REMOTE:  # no Docker here: each host sweeps its own (host_tasks.py)
        from hangar.engine.workspace.host_names import REAP
        from hangar.engine.workspace.remote import send_to_hosts

        close_old_connections()
        return {"sent_to": send_to_hosts(REAP)}
    return reap()


@shared_task(name="hangar.engine.sandbox_watermark", ignore_result=True)
def sandbox_watermark() -> dict[str, Any]:
    """Pause the heaviest writer behind a crossed disk line, unpause when there is room (sandbox.watermark)."""
    from django.conf import settings

    from hangar.engine.workspace.reaping import watermark

    if settings.HANGAR_SANDBOX_REMOTE:
        from hangar.engine.workspace.host_names import WATERMARK
        from hangar.engine.workspace.remote import send_to_hosts

        close_old_connections()
        return {"sent_to": send_to_hosts(WATERMARK)}
    return watermark()


@shared_task(name="hangar.engine.workspace_checkpoints", ignore_result=True)
def workspace_checkpoints() -> dict[str, Any]:
    """Checkpoint the live workspaces that changed, off every run's path (sandbox.workspace_checkpoint)."""
    from django.conf import settings

    from hangar.engine.workspace.reaping import checkpoints

    if settings.HANGAR_SANDBOX_REMOTE:
        from hangar.engine.workspace.host_names import CHECKPOINT
        from hangar.engine.workspace.remote import send_to_hosts

        close_old_connections()
        return {"sent_to": send_to_hosts(CHECKPOINT)}
    return checkpoints()


@shared_task(name="hangar.engine.purge_events", ignore_result=True)
def purge_events() -> dict[str, Any]:
    """Delete old events of finished sessions (HANGAR_EVENT_RETENTION_DAYS; conversations.retention_services)."""
    from hangar.conversations.retention_services import events_purge

    close_old_connections()
    return events_purge()


@shared_task(name=PERMISSION_EXPIRE, ignore_result=True)
def permission_expire(request_id: str) -> bool:
    """A routed or expiring ask is due (scheduled with its eta): reject it, audited, and resume the run."""
    from hangar.engine.agents.headless import permission_expire as expire

    close_old_connections()
    return expire(request_id)


@shared_task(name="hangar.engine.permission_expire_due", ignore_result=True)
def permission_expire_due() -> int:
    """Beat's safety net for the eta tasks: every ask whose time is up."""
    from hangar.engine.agents.headless import permission_expire_due as sweep

    close_old_connections()
    return sweep()
