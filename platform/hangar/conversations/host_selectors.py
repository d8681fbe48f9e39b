"""Reads of the sandbox host registry (SandboxHost): for placement, the operator's list, the host loss
sweep and a draining host. Not actor-scoped: no tenant reads hosts; the engine and the operator do."""

from __future__ import annotations

from django.db import connection
from django.db.models import Q

from hangar.conversations.models import HostState, SandboxHost, Session, SessionStatus


def hosts_all() -> list[SandboxHost]:
    return list(SandboxHost.objects.order_by("name"))


def host_named(name: str) -> SandboxHost | None:
    return SandboxHost.objects.filter(name=name).first()


# The busy sessions whose sandbox is on a lost host, and the busy tasks under them (a task's child works in
# its root's sandbox), roots first. Served by session_host_idx; runs only while a host is lost.
_BUSY_ON_LOST = (
    "WITH RECURSIVE tree(id, depth) AS ("
    " SELECT s.id, 0 FROM conversations_session s JOIN conversations_sandboxhost h"
    "  ON h.name = s.sandbox_host_id AND h.state = 'lost'"
    " UNION SELECT c.id, t.depth + 1 FROM conversations_session c JOIN tree t ON c.parent_id = t.id"
    "  WHERE t.depth < 8)"
    " SELECT s.id, s.sandbox_host_id FROM conversations_session s JOIN tree t ON t.id = s.id"
    " WHERE s.status = 'busy' ORDER BY t.depth, s.id"
)


def busy_sessions_on_lost_hosts() -> list[str]:
    """Busy sessions working in a sandbox on a lost host (roots before their tasks)."""
    if not SandboxHost.objects.filter(state=HostState.LOST).exists():
        return []  # the usual case: one cheap read per sweep
    with connection.cursor() as cursor:
        cursor.execute(_BUSY_ON_LOST)
        return [row[0] for row in cursor.fetchall()]


def sessions_not_busy(among: list[str]) -> list[str]:
    """Which of `among` (sessions with a live sandbox on a draining host) are neither busy nor running. A
    sandbox whose session is gone (deleted, or never this database's) is no one's work: not busy either,
    or it would hold the host from `drained` for ever."""
    busy = set(
        Session.objects.filter(pk__in=among)
        .filter(Q(status="busy") | ~Q(lease_owner=""))
        .values_list("pk", flat=True)
    )
    return [session_id for session_id in among if session_id not in busy]


def session_host_name(session_id: str) -> str | None:
    """The host holding the session's workspace, as the database says now (None: none yet)."""
    name: str | None = Session.objects.filter(pk=session_id).values_list("sandbox_host_id", flat=True).first()
    return name


def sessions_on_host(among: list[str], host: str) -> set[str]:
    """Which of `among` the database places on `host` now (one query)."""
    return set(Session.objects.filter(pk__in=among, sandbox_host_id=host).values_list("pk", flat=True))


def sessions_settled(among: list[str]) -> set[str]:
    """Which of `among` no run holds or waits for now: idle, no lease, no run requested (one query)."""
    return set(
        Session.objects.filter(
            pk__in=among, status=SessionStatus.IDLE, lease_owner="", run_requested=False
        ).values_list("pk", flat=True)
    )


def session_host_lost(session_id: str) -> bool:
    """The host holding the session's workspace is lost (one query)."""
    return Session.objects.filter(pk=session_id, sandbox_host__state=HostState.LOST).exists()


def session_lease_is(session_id: str, owner: str) -> bool:
    """`owner` holds the session's lease now (one query)."""
    return Session.objects.filter(pk=session_id, lease_owner=owner).exists()
