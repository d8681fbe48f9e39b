"""Writes for session workspaces and pushes. A person's request (the ref and branch asked for at session
creation) is audited; the engine's progress marks (preparing, ready, failed) are published on the
session's event stream, so the user sees set-up as a step, and are not audited (no person acted)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.errors import ValidationError
from hangar.repos.models import (
    OperationStatus,
    PushStatus,
    RepoPush,
    SessionWorkspace,
    WorkspaceOperation,
    WorkspaceState,
)
from sandbox import gitops

SETUP_LOG_MAX = 64 * 1024


def default_branch_for(session: Session) -> str:
    return f"hangar/{session.pk[-12:]}"


def workspace_info(row: SessionWorkspace) -> dict:
    return {
        "state": row.state,
        "repo_url": row.repo_url,
        "ref": row.ref,
        "branch": row.branch,
        "base_commit": row.base_commit,
        "error": row.error or None,
        "setup_exit_code": row.setup_exit_code,
        "prepare_ms": row.prepare_ms,
    }


def workspace_request(*, actor: Actor, session: Session, ref: str = "", branch: str = "") -> SessionWorkspace:
    """Record what the session's workspace is cloned from (a branch, tag or commit; default: the project's
    default branch) and the branch it works on (default hangar/<session short id>)."""
    for name, value in (("ref", ref), ("branch", branch)):
        if value and not gitops.valid_ref_name(value):
            raise ValidationError({name: ["Not a valid git ref name."]})
    project = session.project
    if (ref or branch) and not project.repo_url:
        raise ValidationError({"ref": ["The project has no repository."]})
    with transaction.atomic():
        row, _ = SessionWorkspace.objects.update_or_create(
            session=session,
            defaults={
                "repo_url": project.repo_url,
                "ref": ref or project.repo_default_branch,
                "branch": branch or default_branch_for(session),
            },
        )
        audit_record(
            actor=actor, action="workspace.request", target=session, data={"ref": ref, "branch": row.branch}
        )
    return row


def workspace_for_run(session: Session) -> SessionWorkspace:
    """The session's workspace row, made with the project's defaults when the session was created by an
    edge that names no ref (OpenCode's POST /session)."""
    row, _ = SessionWorkspace.objects.get_or_create(
        session=session,
        defaults={
            "repo_url": session.project.repo_url,
            "ref": session.project.repo_default_branch,
            "branch": default_branch_for(session),
        },
    )
    return row


def _save(row: SessionWorkspace, *fields: str) -> None:
    row.save(update_fields=[*fields, "updated_at"])
    publish(row.session, "workspace.updated", {"sessionID": row.session_id, "workspace": workspace_info(row)})


def workspace_preparing(*, row: SessionWorkspace, phase: str) -> None:
    row.state = WorkspaceState.PREPARING
    row.error = {"phase": phase}
    _save(row, "state", "error")


def workspace_cloned(*, row: SessionWorkspace, ref: str, base_commit: str) -> None:
    row.ref, row.base_commit = ref, base_commit
    _save(row, "ref", "base_commit")


def workspace_setup_output(*, session: Session, text: str) -> None:
    publish(session, "workspace.setup.output", {"sessionID": session.pk, "text": text})


def workspace_ready(
    *, row: SessionWorkspace, setup_exit_code: int | None, setup_log: str, prepare_ms: int
) -> None:
    row.state, row.error, row.prepare_ms = WorkspaceState.READY, {}, prepare_ms
    row.setup_exit_code, row.setup_log = setup_exit_code, setup_log[-SETUP_LOG_MAX:]
    _save(row, "state", "error", "prepare_ms", "setup_exit_code", "setup_log")


def workspace_failed(
    *, row: SessionWorkspace, kind: str, message: str, setup_exit_code: int | None = None, setup_log: str = ""
) -> None:
    """Mark the workspace failed (`workspace.updated` says why), with the setup log kept. The run that
    needed it fails with the message (hangar.engine.run.failures: an error answer and `session.error`)."""
    row.state, row.error = WorkspaceState.FAILED, {"kind": kind, "message": message}
    row.setup_exit_code, row.setup_log = setup_exit_code, setup_log[-SETUP_LOG_MAX:]
    _save(row, "state", "error", "setup_exit_code", "setup_log")


def push_record(
    *,
    actor: Actor,
    session: Session,
    branch: str,
    status: str,
    commit: str = "",
    message: str = "",
    error: dict | None = None,
    compare_url: str = "",
) -> RepoPush:
    with transaction.atomic():
        push = RepoPush.objects.create(
            session=session,
            created_by=actor.user,
            branch=branch,
            commit=commit,
            message=message,
            status=status,
            error=error or {},
            compare_url=compare_url,
        )
        audit_record(
            actor=actor,
            action="workspace.push",
            target=session,
            data={"branch": branch, "commit": commit, "status": status, "kind": (error or {}).get("kind")},
        )
        if status == PushStatus.PUSHED:
            publish(
                session,
                "workspace.pushed",
                {"sessionID": session.pk, "branch": branch, "commit": commit, "compareURL": compare_url},
            )
    return push


# --- pushes and pulls run by a worker ------------------------------------------------------------


def operation_info(op: WorkspaceOperation) -> dict:
    return {
        "id": op.pk,
        "kind": op.kind,
        "status": op.status,
        "result": op.result or None,
        "error": op.error or None,
        "created_at": op.created_at.isoformat(),
        "finished_at": op.finished_at.isoformat() if op.finished_at else None,
    }


def _publish_operation(op: WorkspaceOperation) -> None:
    publish(op.session, "workspace.operation", {"sessionID": op.session_id, "operation": operation_info(op)})


def operation_create(*, actor: Actor, session: Session, kind: str, params: dict) -> WorkspaceOperation:
    """Record a requested push or pull (audited; its message and author only, never a credential)."""
    with transaction.atomic():
        op = WorkspaceOperation.objects.create(
            session=session, created_by=actor.user, kind=kind, params=params
        )
        audit_record(
            actor=actor, action=f"workspace.{kind}.request", target=session, data={"operation": op.pk}
        )
        op.session = session
        _publish_operation(op)
    return op


def operation_started(*, op: WorkspaceOperation) -> bool:
    """Pending -> running, once (a task delivered twice runs it once); False if it was not pending."""
    claimed = WorkspaceOperation.objects.filter(pk=op.pk, status=OperationStatus.PENDING).update(
        status=OperationStatus.RUNNING
    )
    if claimed:
        op.status = OperationStatus.RUNNING
        _publish_operation(op)
    return bool(claimed)


def operation_finished(
    *, op: WorkspaceOperation, result: dict | None = None, error: dict | None = None
) -> None:
    op.status = OperationStatus.FAILED if error else OperationStatus.DONE
    op.result, op.error, op.finished_at = result or {}, error or {}, timezone.now()
    op.save(update_fields=["status", "result", "error", "finished_at"])
    _publish_operation(op)
