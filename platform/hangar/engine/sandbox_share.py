"""Per-org cap on live sandboxes (`Org.max_live_sandboxes`, else settings.HANGAR_ORG_MAX_SANDBOXES): before
a session's sandbox becomes live (created, claimed or resumed), the org's least recently used sandboxes
of sessions not running are hibernated to make room. Hibernating keeps the workspace; the session's next
run resumes it. The run cap (hangar.engine.fairness) is below the sandbox cap by default, so there is
normally an idle sandbox to hibernate; when every live sandbox of the org belongs to a running session,
the new one waits briefly for one to end, then fails with a clear error rather than overcommit."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from django.conf import settings

from hangar.conversations.slot_selectors import sessions_running
from hangar.logging import get_logger
from sandbox import census
from sandbox.protocol import SandboxUnavailable

if TYPE_CHECKING:
    from hangar.accounts.models import Org
    from hangar.conversations.models import Session
    from sandbox.manager import DockerSandboxes


log = get_logger(__name__)

WAIT_FOR_ROOM_S = 30.0
POLL_S = 1.0


def org_sandbox_cap(org: Org) -> int:
    cap: int = org.max_live_sandboxes or settings.HANGAR_ORG_MAX_SANDBOXES
    return cap


def make_room(session: Session, manager: DockerSandboxes) -> None:
    """Make room among the org's live sandboxes for `session`'s (a no-op when it is live already)."""
    if manager.is_open(session.pk) or census.is_live(session.pk):
        return
    cap = org_sandbox_cap(session.org)
    deadline = time.monotonic() + WAIT_FOR_ROOM_S
    while True:
        with census.org_lock(str(session.org_id)):
            if _hibernate_for_room(session, manager, cap):
                return
        if time.monotonic() > deadline:
            raise SandboxUnavailable(
                f"your organisation already runs {cap} sandboxes (its limit), all busy: try again when a "
                "session finishes, or ask the platform operator to raise the limit"
            )
        time.sleep(POLL_S)


def _hibernate_for_room(session: Session, manager: DockerSandboxes, cap: int) -> bool:
    """True when the org has room for one more live sandbox (after hibernating idle ones if needed)."""
    live = [s for s in census.live_of_org(manager.api, str(session.org_id)) if s.session_id != session.pk]
    excess = len(live) + 1 - cap
    if excess <= 0:
        return True
    running = sessions_running([s.session_id for s in live])
    idle = [s for s in live if s.session_id not in running]  # least recently active first
    if len(idle) < excess:
        return False
    for victim in idle[:excess]:
        log.info("sandbox_hibernated_for_org_cap", session=victim.session_id, org=session.org_id, cap=cap)
        manager.hibernate(victim.session_id)
    return True
