"""Where a session's sandbox goes, and the record of where it went (Session.sandbox_host).

Today a worker reaches only its own host's Docker engine (docs/scale-out.md: the agent channel and the
host queues that would let it create a sandbox elsewhere are not built), so a new session is placed among
the hosts this worker can reach: its own. Placement's rules (hangar.engine.workspace.placement) still
decide whether this host may take it: a draining, drained or lost host, a host without the project's
labels or without room refuses, and the person is told why. A session whose workspace is on a host
already stays there (its files are there); one on another host cannot be served by this worker. A
session a drained host released (its workspace exported to HANGAR_WORKSPACE_ARCHIVE) is placed anew and
its workspace imported on the host it lands on (`move_in`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hangar.conversations.host_selectors import host_named, hosts_all
from hangar.conversations.host_services import session_sandbox_host_set
from hangar.conversations.models import HostState
from hangar.engine.workspace.host_service import HostSandboxes, beat_once, host_name
from hangar.engine.workspace.placement import Asks, HostView, NoHost, place
from hangar.logging import get_logger
from sandbox import registry, volumes, workspace_archive
from sandbox.protocol import SandboxUnavailable

if TYPE_CHECKING:
    from hangar.conversations.models import SandboxHost, Session

log = get_logger(__name__)


def view_of(host: SandboxHost) -> HostView:
    return HostView(
        name=host.name,
        state=host.state,
        labels=frozenset(str(label) for label in host.labels or []),
        free_memory_mb=host.free_memory_mb,
        free_disk_mb=host.free_disk_mb,
        org_live={str(k): int(v) for k, v in (host.org_live or {}).items()},
    )


def asks_of(session: Session) -> Asks:
    project = session.project
    return Asks(
        org_id=str(session.org_id),
        memory_mb=project.sandbox_memory_mb,
        disk_mb=project.sandbox_disk_mb,
        labels=frozenset(project.sandbox_labels or []),
    )


def place_here(session: Session, sandboxes: HostSandboxes) -> None:
    """Raise SandboxUnavailable (the turn's error) unless this host may hold `session`'s sandbox."""
    here = host_name()
    local = registry.lookup(volumes.session_key(session.pk)) is not None
    if session.sandbox_host_id:
        if session.sandbox_host_id != here:
            raise SandboxUnavailable(
                f"this session's workspace is on sandbox host {session.sandbox_host_id}, which this worker"
                f" ({here}) cannot reach"
            )
        if not local:
            move_in(session)  # exported from here, its release not recorded (a crash between the two)
        return  # its files are here: it stays, whatever the host's state (a busy run finishes first)
    if local:
        return  # a workspace made here before the registry recorded hosts
    host = host_named(here)
    if host is None:  # this process's first use, before its heartbeat registered the host
        beat_once(sandboxes)
        host = host_named(here)
    if host is None:
        raise SandboxUnavailable(f"sandbox host {here} could not be registered")
    try:
        place([view_of(host)], asks_of(session))
    except NoHost as exc:
        raise SandboxUnavailable(str(exc)) from None
    move_in(session)


def move_in(session: Session) -> None:
    """Import the session's workspace when another host exported it (its drain: host_service.move_out);
    the sandbox is then made on it as on a resume. Nothing when there is no export."""
    if workspace_archive.archive_dir() is None or not workspace_archive.exported(session.pk):
        return
    moved = workspace_archive.import_(session.pk)
    if moved is not None:
        log.info("workspace_imported", session=session.pk, host=host_name(), **moved)


def record_placed(session: Session) -> None:
    """The session's sandbox was created or claimed on this host."""
    session_sandbox_host_set(session=session, host_name=host_name())


def report_now(sandboxes: HostSandboxes) -> None:
    """Heart-beat now (a sandbox became live here): what the org caps on other hosts read
    (hangar.engine.workspace.sandbox_share). A failure only waits for the next heartbeat. With no other host
    nobody reads it before then, and a beat (a container listing, disk and memory, a row) would only delay
    the sandbox's start, as it did on every claim of a single host."""
    here = host_name()
    if not any(host.name != here and host.state != HostState.LOST for host in hosts_all()):
        return
    try:
        beat_once(sandboxes)
    except Exception:
        log.warning("sandbox_host_report_failed", host=host_name(), exc_info=True)


def written_elsewhere(orgs: set[str]) -> dict[str, float]:
    """MB each of `orgs` has written on the other sandbox hosts, as their last heartbeats reported it
    (`SandboxHost.org_written_mb`; a lost host's too: its disk still holds them). The org disk budgets
    add it to this host's own count (sandbox.budget)."""
    here = host_name()
    out: dict[str, float] = {}
    for host in hosts_all():
        if host.name == here:
            continue
        for org, mb in (host.org_written_mb or {}).items():
            if str(org) in orgs:
                out[str(org)] = out.get(str(org), 0.0) + float(mb)
    return out
