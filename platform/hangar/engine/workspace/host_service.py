"""This machine's host service, for now run by every worker process that owns the sandbox root: it
registers the host in the registry (SandboxHost) when the worker is ready and heart-beats every
HANGAR_HOST_HEARTBEAT_S with its free disk and memory and its live sandboxes (one upsert: no more is
worth its cost every few seconds), and, while the operator drains the host, hibernates its idle sandboxes
(busy ones when their run has ended) until none is live, then marks it `drained`. With an archive every
host reaches (HANGAR_WORKSPACE_ARCHIVE), each hibernated workspace is exported there and the session
released from the host: its next use places it anew, and that host imports it (`move_out`).

Beat marks a host whose heartbeat stopped `lost` (hangar.engine.run.host_loss); its next heartbeat
makes it active again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

import docker
from django.conf import settings
from django.db import connection

from hangar.conversations.host_selectors import sessions_not_busy
from hangar.conversations.host_services import (
    HostReport,
    host_heartbeat,
    host_mark_drained,
    session_sandbox_host_release,
)
from hangar.conversations.models import HostState
from hangar.logging import get_logger
from sandbox import host_locks, host_stats, workspace_archive

log = get_logger(__name__)

_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def host_name() -> str:
    """This host's name in the registry (HANGAR_SANDBOX_HOST, default the machine's hostname)."""
    return str(settings.HANGAR_SANDBOX_HOST)


class HostSandboxes(Protocol):
    """What the host service needs of the process's sandbox manager (sandbox.manager.DockerSandboxes)."""

    api: docker.APIClient

    def hibernate(self, session_id: str) -> None: ...


def beat_once(sandboxes: HostSandboxes) -> str:
    """Report this host once (registering it if it is new); then, if it is draining, one drain pass.
    Returns its state. Holds a DB connection only for its statements."""
    stats = host_stats.collect(sandboxes.api)
    report = HostReport(
        name=host_name(),
        labels=list(settings.HANGAR_SANDBOX_HOST_LABELS),
        cpus=stats.cpus,
        memory_mb=stats.memory_mb,
        disk_mb=stats.disk_mb,
        free_disk_mb=stats.free_disk_mb,
        free_memory_mb=stats.free_memory_mb,
        live_sandboxes=len(stats.live_sessions),
        org_live=stats.org_live,
        org_written_mb=stats.org_written_mb,
    )
    state, before = host_heartbeat(report)
    if before != state:
        log.warning("sandbox_host_state", host=report.name, state=state, before=before)
    if state == HostState.DRAINING:
        drain_pass(sandboxes, report.name, stats.live_sessions)
    return state


def drain_pass(sandboxes: HostSandboxes, name: str, live: list[str]) -> int:
    """Hibernate the draining host's idle sandboxes (workspaces kept: the session's next run resumes
    it); mark the host drained when none is left live. One worker process at a time per host (a flock),
    so two workers of one host never hibernate the same sandbox at once. Returns how many it hibernated."""
    with host_locks.held_if_free("host-drain.lock") as mine:
        if not mine:
            return 0
        idle = sessions_not_busy(live)
        hibernated = 0
        for session_id in idle:
            try:
                sandboxes.hibernate(session_id)
                hibernated += 1
                log.info("sandbox_hibernated_for_drain", session=session_id, host=name)
            except Exception:
                log.warning("drain_hibernate_failed", session=session_id, exc_info=True)
                continue
            move_out(sandboxes, session_id, name)
        if hibernated == len(live) and host_mark_drained(host_name=name):
            log.warning("sandbox_host_drained", host=name)
        return hibernated


def move_out(sandboxes: HostSandboxes, session_id: str, name: str) -> bool:
    """Export a hibernated session's workspace to the archive every host reaches (HANGAR_WORKSPACE_ARCHIVE)
    and release the session from this host, so its next use places it anew and that host imports it
    (hangar.engine.workspace.hosts.place_here). False, the workspace staying here, when there is no
    archive or it cannot move (a repository clone: sandbox/workspace_archive.py)."""
    if workspace_archive.archive_dir() is None:
        return False
    try:
        moved = workspace_archive.export(sandboxes.api, session_id)
    except workspace_archive.NotMovable as exc:
        log.info("workspace_stays", session=session_id, host=name, reason=str(exc))
        return False
    except Exception:
        log.warning("workspace_export_failed", session=session_id, host=name, exc_info=True)
        return False
    session_sandbox_host_release(session_id=session_id, host_name=name)
    log.info("workspace_exported", session=session_id, host=name, **moved)
    return True


def _run(sandboxes: Callable[[], HostSandboxes], stop: threading.Event) -> None:
    while True:
        try:
            beat_once(sandboxes())
        except Exception:
            log.warning("sandbox_host_heartbeat_failed", host=host_name(), exc_info=True)
        finally:
            connection.close()  # this thread's connection goes back (to the pool) between beats
        if stop.wait(max(0.2, float(settings.HANGAR_HOST_HEARTBEAT_S))):
            return


def start_heartbeat(sandboxes: Callable[[], HostSandboxes]) -> None:
    """Start this process's heartbeat thread (once): a worker calls it when it is ready, with its
    sandbox manager's getter."""
    global _thread
    with _start_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(
                target=_run, args=(sandboxes, threading.Event()), name="sandbox-host-heartbeat", daemon=True
            )
            _thread.start()
