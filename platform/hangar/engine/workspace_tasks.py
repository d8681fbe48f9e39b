"""The repository queue's tasks (sent by name from hangar.engine.session.enqueue). Prepare a repository session's
workspace as soon as the session exists, so the clone and the setup script run while the person writes the
first prompt, not after it. The run does the same (it waits on the session's lock if this task is still at
it, and finds the workspace ready); a failure is recorded on the workspace and told to the session, so this
task has nothing more to report. Run a push or pull asked for through the API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from celery import shared_task
from django.db import connection

from hangar.engine.session.enqueue import PREPARE_WORKSPACE, WORKSPACE_OPERATION, enqueue_prepare
from hangar.logging import get_logger

if TYPE_CHECKING:
    from hangar.conversations.models import Session

log = get_logger(__name__)


@shared_task(name=PREPARE_WORKSPACE, ignore_result=True)
def prepare_workspace(session_id: str) -> None:
    from hangar.conversations.loop_selectors import session_for_run
    from hangar.conversations.models import Session
    from hangar.engine.workspace.sandboxes import sandbox_for
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


@shared_task(name=WORKSPACE_OPERATION, ignore_result=True)
def workspace_operation(operation_id: int) -> None:
    """A push or pull asked for through the API (hangar.engine.repo_ops.operation_run)."""
    from hangar.engine.repo_ops import operation_run

    try:
        operation_run(operation_id)
    finally:
        connection.close()
