"""Asking a worker to run a session: the Celery task is sent by name, so whoever enqueues (the engine's
services, the worker re-enqueueing, beat's recovery, any edge) imports nothing of the loop or its tools.

The runner owns the session through a lease (hangar.engine.leases), so enqueueing more than once is
harmless: a second task that cannot take the lease returns, and the holder sees `run_requested` when it
releases."""

from __future__ import annotations

import os

RUN_SESSION = "hangar.engine.run_session"


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
