"""Where a session's sandbox goes, and the record of where it went (Session.sandbox_host), on the host
that makes it: a worker with Docker for its own host, or a host service for a worker without Docker
(hangar.engine.workspace.remote, which chose this host by placement over every host).

Placement's rules (hangar.engine.workspace.placement) decide whether this host may take a new session: a
draining, drained or lost host, a host without the project's labels or without room refuses, and the
person is told why. A session whose workspace is on a host already stays there (its files are there);
one bound to another host is not served here (BoundElsewhere: a remote worker asks that host instead). A
homeless session (new, or released by a drain or a host loss) is bound here by one conditional UPDATE
before anything is made or imported, so two hosts taking it at once cannot both make it a sandbox: the
loser makes nothing and answers with the winner's name. A session a drained host released (its workspace
exported to HANGAR_WORKSPACE_ARCHIVE) has its workspace imported on the host it lands on (`move_in`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache

from hangar.conversations.host_selectors import host_named, hosts_all
from hangar.conversations.host_services import (
    session_sandbox_host_bind,
    session_sandbox_host_release,
    session_sandbox_host_set,
)
from hangar.conversations.models import HostState
from hangar.engine.workspace.host_service import HostSandboxes, beat_once, host_name
from hangar.engine.workspace.placement import Asks, BoundElsewhere, HostView, NoHost, place
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


def choose_host(session: Session) -> str:
    """Placement over every registered host (NoHost when none may take the session), counting besides
    each host's last heartbeat the org's sessions placed on it since: a heartbeat comes every
    HANGAR_HOST_HEARTBEAT_S and a cold start takes seconds more, so a burst of one org's new sessions would
    otherwise all go to the host the last heartbeat found emptiest. A placement counts for two heartbeat
    intervals (by then a heartbeat reports its sandbox); meanwhile it may be counted twice, which only
    tilts the spread, never a cap (the caps count live sandboxes: hangar.engine.workspace.sandbox_share).
    Without the cache it places on the heartbeats alone."""
    asks = asks_of(session)
    views = [view_of(host) for host in hosts_all()]
    keys = {view.name: _recent_key(view.name, asks.org_id) for view in views}
    try:
        recent = cache.get_many(list(keys.values()))
    except Exception:
        log.warning("recent_placements_unreadable", exc_info=True)
        recent = {}
    views = [_plus_recent(view, asks.org_id, int(recent.get(keys[view.name]) or 0)) for view in views]
    chosen = place(views, asks).name
    try:
        timeout = max(1, round(2 * settings.HANGAR_HOST_HEARTBEAT_S))
        if not cache.add(keys[chosen], 1, timeout=timeout):
            cache.incr(keys[chosen])
    except Exception:  # gone between add and incr (expired), or no cache: the spread waits a heartbeat
        log.warning("recent_placement_unrecorded", host=chosen, exc_info=True)
    return chosen


def _recent_key(host: str, org_id: str) -> str:
    return f"placed:{host}:{org_id}"


def _plus_recent(view: HostView, org_id: str, placed: int) -> HostView:
    if not placed:
        return view
    return dataclasses.replace(
        view, org_live={**view.org_live, org_id: view.org_live.get(org_id, 0) + placed}
    )


def asks_of(session: Session) -> Asks:
    project = session.project
    return Asks(
        org_id=str(session.org_id),
        memory_mb=project.sandbox_memory_mb,
        disk_mb=project.sandbox_disk_mb,
        labels=frozenset(project.sandbox_labels or []),
    )


def place_here(session: Session, sandboxes: HostSandboxes) -> bool:
    """Bind `session` to this host, or raise SandboxUnavailable (the turn's error) if this host may not
    hold its sandbox: BoundElsewhere when another host holds it. A homeless session is bound here (one
    conditional UPDATE: hangar.conversations.host_services.session_sandbox_host_bind) before anything is
    made or imported, so a host that loses that race leaves nothing behind. True when this call bound it
    (the caller lets it go again if it then fails with nothing made here: `unbind_if_empty`)."""
    here = host_name()
    local = registry.lookup(volumes.session_key(session.pk)) is not None
    if session.sandbox_host_id:
        if session.sandbox_host_id != here:
            raise _elsewhere(session.sandbox_host_id, here)
        if not local:
            move_in(session)  # exported from here, its release not recorded (a crash between the two)
        return False  # its files are here: it stays, whatever the host's state (a busy run finishes first)
    host = host_named(here)
    if host is None:  # this process's first use, before its heartbeat registered the host
        beat_once(sandboxes)
        host = host_named(here)
    if host is None:  # the binding below names the host's row
        raise SandboxUnavailable(f"sandbox host {here} could not be registered")
    if not local:  # a workspace made here before the registry recorded hosts needs no placement
        try:
            place([view_of(host)], asks_of(session))
        except NoHost as exc:
            raise SandboxUnavailable(str(exc)) from None
    holder = session_sandbox_host_bind(session=session, host_name=here)
    if holder is None:
        raise SandboxUnavailable(f"session {session.pk} is gone")
    if holder != here:
        log.info("sandbox_host_bound_elsewhere", session=session.pk, host=here, holder=holder)
        raise _elsewhere(holder, here)
    if not local:
        try:
            move_in(session)
        except BaseException:
            unbind_if_empty(session)  # the export is given back: whoever places it next imports it
            raise
    return True


def _elsewhere(holder: str, here: str) -> BoundElsewhere:
    return BoundElsewhere(
        f"this session's workspace is on sandbox host {holder}, which this worker ({here}) cannot reach",
        holder,
    )


def unbind_if_empty(session: Session) -> None:
    """This host bound the session, then failed before any workspace of it was made or imported here (a
    cap, a budget, Docker): let it go, so placement may choose again rather than pin it to a host that
    holds nothing of it."""
    if registry.lookup(volumes.session_key(session.pk)) is None:
        session_sandbox_host_release(session_id=session.pk, host_name=host_name())
        session.sandbox_host_id = None


def move_in(session: Session) -> None:
    """Import the session's workspace when another host exported it (its drain: host_service.move_out);
    the sandbox is then made on it as on a resume. Nothing when there is no export."""
    if workspace_archive.archive_dir() is None or not workspace_archive.exported(session.pk):
        return
    # The org's budgets count what it wrote on the other hosts, as a new workspace's do.
    moved = workspace_archive.import_(session.pk, elsewhere=written_elsewhere())
    if moved is not None:
        log.info("workspace_imported", session=session.pk, host=host_name(), **moved)


def record_placed(session: Session) -> None:
    """The session's sandbox was created or claimed on this host: bound here (it was, by place_here, unless
    a failed acquisition on this host let it go meanwhile)."""
    holder = session_sandbox_host_set(session=session, host_name=host_name())
    if holder not in (None, host_name()):
        log.error("sandbox_host_bound_twice", session=session.pk, host=host_name(), holder=holder)


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


def written_elsewhere(orgs: set[str] | None = None) -> dict[str, float]:
    """MB each of `orgs` (None: every org) has written on the other sandbox hosts, as their last
    heartbeats reported it (`SandboxHost.org_written_mb`; a lost host's too: its disk still holds them).
    The org disk budgets add it to this host's own count (sandbox.budget): a new workspace, an import,
    a clone's or layer's room, the watermark's pause of a writer."""
    here = host_name()
    out: dict[str, float] = {}
    for host in hosts_all():
        if host.name == here:
            continue
        for org, mb in (host.org_written_mb or {}).items():
            if orgs is None or str(org) in orgs:
                out[str(org)] = out.get(str(org), 0.0) + float(mb)
    return out
