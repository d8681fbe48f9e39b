"""Reads of a session's workspace record and pushes. The caller has already resolved the session through
a tenant-scoped selector (a foreign session is a 404 before these run)."""

from hangar.repos.models import RepoPush, SessionWorkspace


def workspace_get(session) -> SessionWorkspace | None:
    return SessionWorkspace.objects.filter(session=session).first()


def pushes_list(session, limit: int = 20) -> list[RepoPush]:
    return list(RepoPush.objects.filter(session=session)[:limit])
