"""Prepare a repository session's workspace as soon as the session exists, so the clone and the setup
script run while the person writes the first prompt, not after it. The run does the same (it waits on the
session's lock if this task is still at it, and finds the workspace ready); a failure is recorded on the
workspace and told to the session, so this task has nothing more to report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from celery import shared_task
from django.db import connection, transaction

from hangar.logging import get_logger

if TYPE_CHECKING:
    from hangar.conversations.models import Session

log = get_logger(__name__)
TASK = "hangar.engine.prepare_workspace"
OPERATION_TASK = "hangar.engine.workspace_operation"


@shared_task(name=TASK, ignore_result=True)
def prepare_workspace(session_id: str) -> None:
    from hangar.conversations.loop_selectors import session_for_run
    from hangar.conversations.models import Session
    from hangar.engine.sandboxes import sandbox_for
    from sandbox.protocol import SandboxError

    try:
        sandbox_for(session_for_run(session_id))
    except Session.DoesNotExist:
        pass
    except SandboxError:
        log.info("workspace_prepare_failed", session=session_id)
    finally:
        connection.close()


def workspace_prepare_soon(session: Session) -> None:
    """Called by the edges that create sessions: enqueue the preparation if the project has a repository
    or a setup script (after the caller's transaction commits, on the repository queue)."""
    project = session.project
    if project.repo_url or project.setup_script.strip():
        enqueue_prepare(session.pk)


def enqueue_prepare(session_id: str) -> None:
    from celery import current_app

    from hangar.engine.enqueue import repo_queue

    queue = repo_queue()

    def send() -> None:
        if current_app.conf.task_always_eager:
            return  # eager (some test set-ups): the first run prepares the workspace instead
        current_app.send_task(TASK, args=[session_id], queue=queue, ignore_result=True)

    transaction.on_commit(send)


@shared_task(name=OPERATION_TASK, ignore_result=True)
def workspace_operation(operation_id: int) -> None:
    """A push or pull asked for through the API (hangar.engine.repo_ops.operation_run)."""
    from hangar.engine.repo_ops import operation_run

    try:
        operation_run(operation_id)
    finally:
        connection.close()


def enqueue_operation(operation_id: int) -> None:
    from celery import current_app

    from hangar.engine.enqueue import repo_queue

    queue = repo_queue()

    def send() -> None:
        if current_app.conf.task_always_eager:
            from hangar.engine.repo_ops import operation_run

            operation_run(operation_id)
            return
        current_app.send_task(OPERATION_TASK, args=[operation_id], queue=queue, ignore_result=True)

    transaction.on_commit(send)
