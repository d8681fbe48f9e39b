"""Asking a worker to run a session, prepare a workspace or run a push or pull: each Celery task is sent by
name, so whoever enqueues (the engine's services, the worker re-enqueueing, beat's recovery, repository
operations, any edge) imports nothing of the loop, its tools or the task modules (which import them).

The runner owns the session through a lease (hangar.engine.run.leases), so enqueueing more than once is
harmless: a second task that cannot take the lease returns, and the holder sees `run_requested` when it
releases."""

from __future__ import annotations

import os
from datetime import datetime

from django.db import transaction

RUN_SESSION = "hangar.engine.run_session"
PREPARE_WORKSPACE = "hangar.engine.prepare_workspace"  # hangar.engine.workspace_tasks
WORKSPACE_OPERATION = "hangar.engine.workspace_operation"
PERMISSION_EXPIRE = "hangar.engine.permission_expire"  # hangar.engine.tasks (hangar.engine.agents.headless)


def engine_queue() -> str:
    """Read per call, not at import: tests isolate their workers on a queue of their own."""
    return os.environ.get("HANGAR_ENGINE_QUEUE", "celery")


def repo_queue() -> str:
    """The queue of repository work (clone, setup script, push, pull: minutes, not a step's
    milliseconds), consumed by workers of its own (deploy/run-worker.sh), so a slow clone never holds a
    thread an agent step waits for. HANGAR_REPO_QUEUE, default "<engine queue>.repo"."""
    return os.environ.get("HANGAR_REPO_QUEUE") or f"{engine_queue()}.repo"


class _Sent:
    """What app.send_task hands back instead of an AsyncResult (run_session's result is ignored)."""

    def __init__(self, task_id: str):
        self.id = task_id


def enqueue_run(session_id: str) -> None:
    from hangar.celery import app

    queue = engine_queue()
    if app.conf.task_always_eager:
        app.tasks[RUN_SESSION].apply_async(args=[session_id], queue=queue)
        return
    # Not apply_async: it builds an AsyncResult and asks the result backend about the call, and Celery keeps
    # its backend per thread; under ASGI every request is a new thread, so each prompt would build one.
    app.send_task(RUN_SESSION, args=[session_id], queue=queue, ignore_result=True, result_cls=_Sent)


def enqueue_prepare(session_id: str) -> None:
    """Prepare a session's workspace (clone, setup script) once the caller's transaction commits, on the
    repository queue. Eager (some test set-ups): nothing is sent, the first run prepares it instead."""
    from hangar.celery import app

    queue = repo_queue()

    def send() -> None:
        if not app.conf.task_always_eager:
            app.send_task(
                PREPARE_WORKSPACE, args=[session_id], queue=queue, ignore_result=True, result_cls=_Sent
            )

    transaction.on_commit(send)


def enqueue_operation(operation_id: int) -> None:
    """Run a push or pull (hangar.engine.repo_ops.operation_run) once the caller's transaction commits, on
    the repository queue."""
    from hangar.celery import app

    queue = repo_queue()

    def send() -> None:
        if app.conf.task_always_eager:
            app.loader.import_default_modules()  # the task's module (CELERY_IMPORTS) registers it
            app.tasks[WORKSPACE_OPERATION].apply(args=[operation_id])
            return
        app.send_task(
            WORKSPACE_OPERATION, args=[operation_id], queue=queue, ignore_result=True, result_cls=_Sent
        )

    transaction.on_commit(send)


def enqueue_expiry(request_id: str, eta: datetime) -> None:
    """Expire a permission request when it is due (hangar.engine.agents.headless), once the caller's transaction
    commits, on the engine's queue. Eager: nothing is sent; beat's sweep expires it instead."""
    from hangar.celery import app

    def send() -> None:
        if not app.conf.task_always_eager:
            app.send_task(
                PERMISSION_EXPIRE,
                args=[request_id],
                eta=eta,
                queue=engine_queue(),
                ignore_result=True,
                result_cls=_Sent,
            )

    transaction.on_commit(send, robust=True)
