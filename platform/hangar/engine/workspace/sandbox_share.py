"""Per-org cap on live sandboxes (`Org.max_live_sandboxes`, else settings.HANGAR_ORG_MAX_SANDBOXES): before
a session's sandbox becomes live (created, claimed or resumed), the org's least recently used sandboxes
of sessions not running are hibernated to make room. Hibernating keeps the workspace; the session's next
run resumes it. The run cap (hangar.engine.run.fairness) is below the sandbox cap by default, so there is
normally an idle sandbox to hibernate; when every live sandbox of the org belongs to a running session,
the new one waits briefly for one to end, then fails with a clear error rather than overcommit.

The same holds per person (HANGAR_USER_MAX_SANDBOXES): an org on the default cap counts against each of
its owners, whose orgs together keep at most that many sandboxes live; an owner's least recently used idle
sandbox, in any of their orgs, is hibernated to make room (per owner, not per prompter:
hangar.engine.run.fairness says why)."""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from hangar.accounts.selectors import owners_orgs
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


@dataclass(frozen=True)
class Share:
    """Live sandboxes that share a cap: one org's, or the orgs of one of its owners."""

    lock: str  # census.org_lock's name
    orgs: frozenset[str]
    cap: int
    full: str  # what the person is told when every one of them is busy


def shares_of(session: Session) -> list[Share]:
    """The caps the session's new sandbox must fit: its org's, then each owner's (in the owners' order)."""
    org = str(session.org_id)
    cap = org_sandbox_cap(session.org)
    shares = [
        Share(org, frozenset({org}), cap, f"your organisation already runs {cap} sandboxes (its limit)")
    ]
    per_owner = int(settings.HANGAR_USER_MAX_SANDBOXES)
    if per_owner > 0:
        for user_id, orgs in owners_orgs(session.org_id, uncapped="max_live_sandboxes").items():
            shares.append(
                Share(
                    f"owner-{user_id}",
                    frozenset(str(o) for o in orgs),
                    per_owner,
                    f"the orgs of this organisation's owner already run {per_owner} sandboxes together "
                    "(one person's limit)",
                )
            )
    return shares


def make_room(session: Session, manager: DockerSandboxes) -> None:
    """Make room among the org's (and its owners') live sandboxes for `session`'s (a no-op when it is live
    already)."""
    if manager.is_open(session.pk) or census.is_live(session.pk):
        return
    shares = shares_of(session)
    deadline = time.monotonic() + WAIT_FOR_ROOM_S
    while True:
        with ExitStack() as locks:
            for share in shares:  # the org's lock first, then its owners' in their order
                locks.enter_context(census.org_lock(share.lock))
            full = _hibernate_for_room(session, manager, shares)
            if full is None:
                return
        if time.monotonic() > deadline:
            raise SandboxUnavailable(
                f"{full.full}, all busy: try again when a session finishes, or ask the platform "
                "operator to raise the limit"
            )
        time.sleep(POLL_S)


def _hibernate_for_room(session: Session, manager: DockerSandboxes, shares: list[Share]) -> Share | None:
    """None when every share has room for one more live sandbox (after hibernating idle ones if needed);
    else the share whose live sandboxes are all busy. One Docker call."""
    orgs = set().union(*(share.orgs for share in shares))
    live = [s for s in census.live_of_orgs(manager.api, orgs) if s.session_id != session.pk]
    running: set[str] | None = None
    victims: list[census.Live] = []
    for share in shares:
        mine = [s for s in live if s.org_id in share.orgs and s not in victims]
        excess = len(mine) + 1 - share.cap
        if excess <= 0:
            continue
        if running is None:
            running = sessions_running([s.session_id for s in live])
        idle = [s for s in mine if s.session_id not in running]  # least recently active first
        if len(idle) < excess:
            return share
        victims.extend(idle[:excess])
    for victim in victims:
        log.info("sandbox_hibernated_for_cap", session=victim.session_id, org=session.org_id)
        manager.hibernate(victim.session_id)
    return None
