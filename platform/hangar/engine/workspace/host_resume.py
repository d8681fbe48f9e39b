"""A session whose sandbox host is lost resumes on another host from its last durable checkpoint
(docs/scale-out.md, "Host loss"), at the next acquisition of its sandbox (hangar.engine.workspace.remote):

- the checkpoint: the newest export of its workspace in the archive (HANGAR_WORKSPACE_ARCHIVE: the copy
  its host makes periodically of a live workspace that changed, sandbox.workspace_checkpoint, or the one
  a drain made and a host imported, kept there, or one not yet imported), which the host it lands on
  imports; else, for a project with a repository, the session's branch as last pushed (prepare.py checks
  it out when the repository has it), or the ref it started from; else an empty workspace. What the
  workspace gained on the lost host after that checkpoint is lost;
- the session's binding to the lost host is released and the session told (the `session.notice` event,
  shown by the web app), in one transaction; placement then chooses among the hosts that are not lost.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from hangar.conversations.host_services import session_moved_off_lost_host
from hangar.logging import get_logger
from hangar.repos.selectors import push_last, workspace_get
from sandbox import workspace_archive

if TYPE_CHECKING:
    from hangar.conversations.models import Session

log = get_logger(__name__)


def checkpoint_of(session: Session) -> str:
    """Make the session's newest export the one its next host imports; say what it resumes from."""
    mark = workspace_archive.restore_checkpoint(session.pk)
    if mark is not None:
        at = dt.datetime.fromtimestamp(float(mark.get("exported_at") or 0), tz=dt.UTC)
        how = (
            "checkpointed" if mark.get("checkpoint") else "exported"
        )  # the host's periodic copy, or a drain's
        return f"its workspace as {how} at {at:%Y-%m-%d %H:%M:%S} UTC"
    if session.project.repo_url:
        row, push = workspace_get(session), push_last(session)
        if row is not None and push is not None and push.branch == row.branch:
            return f"the session's branch {push.branch} as last pushed ({push.commit[:12]})"
        ref = row.ref if row is not None and row.ref else "its default branch"
        return f"a new checkout of the project's repository at {ref} (nothing pushed)"
    return "an empty workspace"


def leave_lost_host(session: Session, lost: str, place: str) -> bool:
    """Release the session from `lost` and tell it where it resumes (`place`: the host placement chose).
    False if another process moved it first (then its checkpoint is left as that one made it)."""

    def tell() -> str:
        return (
            f"sandbox host {lost} was lost; resumed on {place} from {checkpoint_of(session)};"
            " changes since then are lost"
        )

    moved = session_moved_off_lost_host(session=session, lost=lost, tell=tell)
    if moved:
        log.warning("session_resumed_off_lost_host", session=session.pk, lost=lost, host=place)
    return moved
