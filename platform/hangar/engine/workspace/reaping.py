"""The periodic sandbox sweep (sandbox.reaper) with the platform's view of each session: alive while
its row exists, dormant while archived. Archiving hibernates a sandbox and keeps its workspace (unarchive
brings the files back on the next run); only a deleted session's workspace is destroyed, and only once it
has been idle for HANGAR_SANDBOX_DELETE_GRACE_S."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import DatabaseError

from hangar.logging import get_logger

log = get_logger(__name__)


def reap() -> dict[str, Any]:
    from hangar.conversations.loop_selectors import session_exists, session_is_archived, sessions_existing
    from hangar.conversations.slot_selectors import sessions_running
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import workspace_archive
    from sandbox.reaper import Reaper

    report = Reaper(
        manager(),
        session_exists,
        is_session_archived=session_is_archived,
        # A worker without Docker (HANGAR_SANDBOX_REMOTE) never touches this host's idle clock: a session
        # with a run under way is not idle.
        is_session_running=lambda session_id: bool(sessions_running([session_id])),
        gone_grace_s=settings.HANGAR_SANDBOX_DELETE_GRACE_S,
        archived_idle_s=settings.HANGAR_SANDBOX_ARCHIVED_IDLE_S,
        alive_of=sessions_existing,
        archived_of=lambda ids: sessions_existing(ids, archived=True),
    ).run_once()
    for session_id in report.destroyed:  # a deleted session's checkpoint goes with its workspace
        workspace_archive.forget_checkpoint(session_id)
    return {**getattr(report, "__dict__", {}), **prune_repositories()}


def watermark() -> dict[str, Any]:
    """The disk's lines (sandbox.watermark): thin-provisioned workspaces must not fill the disk. Each
    org's line counts what it wrote on the other sandbox hosts; if the registry cannot be read, this
    sweep judges the orgs by this host alone rather than skip the host's own line."""
    from hangar.engine.workspace.hosts import written_elsewhere
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import watermark as lines

    try:
        elsewhere = written_elsewhere()
    except DatabaseError:
        log.warning("watermark_without_other_hosts", exc_info=True)
        elsewhere = {}
    return lines.sweep(manager(), elsewhere=elsewhere).__dict__


def checkpoints() -> dict[str, Any]:
    """This host's live workspaces that changed since their last checkpoint, copied to the archive
    (sandbox.workspace_checkpoint); only sessions the database places on this host. A session whose run
    is over is due at once, so the end of each run is checkpointed within a sweep (30 s)."""
    from hangar.conversations.host_selectors import sessions_on_host, sessions_settled
    from hangar.engine.workspace.host_service import host_name
    from hangar.logging import get_logger
    from sandbox import workspace_checkpoint

    here = host_name()
    report = workspace_checkpoint.sweep(
        settings.HANGAR_WORKSPACE_CHECKPOINT_S,
        ours=lambda ids: sessions_on_host(ids, here),
        settled=sessions_settled,
    )
    if report.made or report.failed:
        get_logger(__name__).info("workspace_checkpoints", host=here, made=report.made, failed=report.failed)
    return report.__dict__


def prune_repositories() -> dict[str, Any]:
    """Mirrors nobody used for a while and layers beyond their byte budget (sandbox.repo_disk)."""
    from sandbox import gitops

    return {"mirrors_pruned": gitops.prune_mirrors(), "layers_pruned": gitops.prune_layers()}
