"""Writes of the sandbox host registry (SandboxHost; docs/scale-out.md): a host's heartbeat, beat marking
silent hosts lost, the operator's drain and activate, and which host holds a session's sandbox.

Not actor-scoped: hosts are the platform operator's (manage.py sandbox_host, the superuser admin), and
their own host service and beat write the rest. The heartbeat is one statement (an upsert): a host beats
every few seconds, and a statement per beat is what it may cost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import HostState, SandboxHost, Session
from hangar.errors import ValidationError

# The operator's moves: drain takes an active (or lost) host out of placement; activate puts any back.
OPERATOR_STATES = {HostState.DRAINING, HostState.ACTIVE}


@dataclass(frozen=True)
class HostReport:
    """What a host's service reports with each heartbeat."""

    name: str
    labels: list[str]
    cpus: float
    memory_mb: int
    disk_mb: int
    free_disk_mb: int
    free_memory_mb: int
    live_sandboxes: int
    org_live: dict[str, int]
    org_written_mb: dict[str, float] = field(default_factory=dict)  # MB written here, by org


# Registers the host or beats: a lost host that beats again is active (its ended sessions stay ended);
# a draining or drained one stays so (only the operator activates it). Returns (state now, state before;
# None when the host is new).
_BEAT = (
    "WITH prev AS (SELECT state FROM conversations_sandboxhost WHERE name = %(name)s)"
    " INSERT INTO conversations_sandboxhost AS h (name, labels, cpus, memory_mb, disk_mb, free_disk_mb,"
    " free_memory_mb, live_sandboxes, org_live, org_written_mb, heartbeat_at, state, state_changed_at)"
    " VALUES (%(name)s, %(labels)s::jsonb, %(cpus)s, %(memory_mb)s, %(disk_mb)s, %(free_disk_mb)s,"
    " %(free_memory_mb)s, %(live)s, %(org_live)s::jsonb, %(org_written)s::jsonb, now(), 'active', now())"
    " ON CONFLICT (name) DO UPDATE SET labels = EXCLUDED.labels, cpus = EXCLUDED.cpus,"
    " memory_mb = EXCLUDED.memory_mb, disk_mb = EXCLUDED.disk_mb, free_disk_mb = EXCLUDED.free_disk_mb,"
    " free_memory_mb = EXCLUDED.free_memory_mb, live_sandboxes = EXCLUDED.live_sandboxes,"
    " org_live = EXCLUDED.org_live, org_written_mb = EXCLUDED.org_written_mb, heartbeat_at = now(),"
    " state = CASE WHEN h.state = 'lost' THEN 'active' ELSE h.state END,"
    " state_changed_at = CASE WHEN h.state = 'lost' THEN now() ELSE h.state_changed_at END"
    " RETURNING h.state, (SELECT state FROM prev)"
)


def host_heartbeat(report: HostReport) -> tuple[str, str | None]:
    """Record the host's heartbeat (registering it the first time): (its state now, its state before)."""
    with connection.cursor() as cursor:
        cursor.execute(
            _BEAT,
            {
                "name": report.name,
                "labels": json.dumps(report.labels),
                "cpus": report.cpus,
                "memory_mb": report.memory_mb,
                "disk_mb": report.disk_mb,
                "free_disk_mb": report.free_disk_mb,
                "free_memory_mb": report.free_memory_mb,
                "live": report.live_sandboxes,
                "org_live": json.dumps(report.org_live),
                "org_written": json.dumps(report.org_written_mb),
            },
        )
        state, before = cursor.fetchone()
    return state, before


def hosts_mark_lost(*, silent_for_s: float) -> list[str]:
    """Beat's: every active or draining host whose last heartbeat is older than `silent_for_s` is lost
    (audited). A drained host has nothing live to lose: it stays drained. Returns the names."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_sandboxhost SET state = 'lost', state_changed_at = now()"
            " WHERE state IN ('active', 'draining')"
            " AND heartbeat_at < now() - make_interval(secs => %s) RETURNING name, heartbeat_at",
            [silent_for_s],
        )
        lost = cursor.fetchall()
        for name, heartbeat_at in lost:
            audit_record(
                actor=system_actor(None, "beat"),
                action="sandbox_host.lost",
                target_type="conversations.sandboxhost",
                target_id=name,
                data={"host": name, "last_heartbeat": heartbeat_at.isoformat()},
            )
    return [name for name, _ in lost]


def host_state_set(*, host_name: str, state: str, by: str) -> SandboxHost:
    """The operator drains a host (`draining`: no new session; its host service hibernates the idle
    ones) or activates it again. `by` names who asked (the command, an admin's email), for the audit."""
    if state not in OPERATOR_STATES:
        raise ValidationError({"state": f"one of {', '.join(sorted(OPERATOR_STATES))}"})
    with transaction.atomic():
        host = SandboxHost.objects.select_for_update().filter(name=host_name).first()
        if host is None:
            raise ValidationError({"name": f"no sandbox host {host_name!r}"})
        before = host.state
        draining_already = state == HostState.DRAINING and before == HostState.DRAINED
        if before != state and not draining_already:
            host.state, host.state_changed_at = state, timezone.now()
            host.save(update_fields=["state", "state_changed_at"])
            audit_record(
                actor=system_actor(None, by[:200]),
                action=f"sandbox_host.{'drain' if state == HostState.DRAINING else 'activate'}",
                target=host,
                data={"host": host.name, "from": before, "to": state},
            )
    return host


def host_mark_drained(*, host_name: str) -> bool:
    """A draining host has no live sandbox left: it is drained. False if it is no longer draining (the
    operator activated it meanwhile)."""
    return bool(
        SandboxHost.objects.filter(name=host_name, state=HostState.DRAINING).update(
            state=HostState.DRAINED, state_changed_at=timezone.now()
        )
    )


def session_sandbox_host_bind(*, session: Session, host_name: str) -> str | None:
    """Bind the session to `host_name` if it has no host: one conditional UPDATE, so of two hosts taking a
    homeless session at once (new, or released by a drain or a host loss) exactly one binds it, before
    either makes a sandbox or imports a workspace. Returns the host holding it now: `host_name`, or the
    one that bound it first; None if the session is gone."""
    for _ in range(3):  # a holder that released it between our UPDATE and our read: try again
        if Session.objects.filter(pk=session.pk, sandbox_host__isnull=True).update(sandbox_host_id=host_name):
            session.sandbox_host_id = host_name
            return host_name
        found = Session.objects.filter(pk=session.pk).values_list("sandbox_host_id", flat=True)
        if not found:
            return None
        if found[0] is not None:
            session.sandbox_host_id = found[0]
            return str(found[0])
    return None


def session_sandbox_host_set(*, session: Session, host_name: str) -> str | None:
    """The session's sandbox (and workspace) is on `host_name` now: bound when created or claimed there,
    if it was not bound already. Returns the host holding it (another one only if it lost the binding
    meanwhile)."""
    if session.sandbox_host_id == host_name:
        return host_name
    return session_sandbox_host_bind(session=session, host_name=host_name)


def session_sandbox_host_release(*, session_id: str, host_name: str) -> bool:
    """The session's workspace left `host_name` (exported: docs/scale-out.md, "Drain"): it has no host
    until it is placed again. Only if it is still recorded there (False otherwise)."""
    return bool(Session.objects.filter(pk=session_id, sandbox_host_id=host_name).update(sandbox_host_id=None))


HOST_MOVED = "session.notice"  # the event a session's move off a lost host is told by


def session_moved_off_lost_host(*, session: Session, lost: str, tell: Callable[[], str]) -> bool:
    """The session's host `lost` is lost and the session resumes elsewhere from a checkpoint: under the
    session's row lock, `tell()` makes the checkpoint ready and says what it is, the binding is released
    (placement chooses anew) and the session is told, in one transaction. False (nothing done) if it is
    no longer recorded on `lost` (another process moved it first)."""
    with transaction.atomic():
        if not Session.objects.select_for_update().filter(pk=session.pk, sandbox_host_id=lost).exists():
            return False
        message = tell()
        Session.objects.filter(pk=session.pk).update(sandbox_host_id=None)
        session.sandbox_host_id = None
        publish(
            session,
            HOST_MOVED,
            {"sessionID": session.pk, "kind": "sandbox_host_lost", "host": lost, "message": message},
        )
    return True
