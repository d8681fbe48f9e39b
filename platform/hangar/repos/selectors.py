"""Reads of a session's workspace record and pushes. The caller has already resolved the session through
a tenant-scoped selector (a foreign session is a 404 before these run)."""

from hangar.repos.models import PushStatus, RepoPush, SessionWorkspace, WorkspaceOperation


def workspace_get(session) -> SessionWorkspace | None:
    return SessionWorkspace.objects.filter(session=session).first()


def pushes_list(session, limit: int = 20) -> list[RepoPush]:
    return list(RepoPush.objects.filter(session=session)[:limit])


def operation_get(session, operation_id: int) -> WorkspaceOperation | None:
    return WorkspaceOperation.objects.filter(session=session, pk=operation_id).first()


def operations_list(session, limit: int = 20) -> list[WorkspaceOperation]:
    return list(WorkspaceOperation.objects.filter(session=session)[:limit])


def operation_for_run(operation_id: int) -> WorkspaceOperation | None:
    """The operation with its session, project and author, for the worker that runs it."""
    return (
        WorkspaceOperation.objects.select_related("session__project", "created_by")
        .filter(pk=operation_id)
        .first()
    )


def push_last(session) -> RepoPush | None:
    """The session's newest successful push."""
    return RepoPush.objects.filter(session=session, status=PushStatus.PUSHED).order_by("-created_at").first()
