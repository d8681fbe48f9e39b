"""Per-org cap on live sandboxes (`Org.max_live_sandboxes`, else settings.HANGAR_ORG_MAX_SANDBOXES): before
a session's sandbox becomes live (created, claimed or resumed), the org's least recently used sandboxes
of sessions not running are hibernated to make room. Hibernating keeps the workspace; the session's next
run resumes it. The run cap (hangar.engine.run.fairness) is below the sandbox cap by default, so there is
normally an idle sandbox to hibernate; when every live sandbox of the org belongs to a running session,
the new one waits briefly for one to end, then fails with a clear error rather than overcommit.

The same holds per person (HANGAR_USER_MAX_SANDBOXES): an org on the default cap counts against each of
its owners, whose orgs together keep at most that many sandboxes live; an owner's least recently used idle
sandbox, in any of their orgs, is hibernated to make room (per owner, not per prompter:
hangar.engine.run.fairness says why).

Across sandbox hosts (docs/scale-out.md, "Org caps across hosts"): the cap counts the org's live sandboxes
on every host that is not lost. This host's from its Docker engine, exact, under the host's org lock
(what it just started included); every other host's from its registry row (`SandboxHost.org_live`), as
of its last heartbeat (HANGAR_HOST_HEARTBEAT_S). A host heart-beats at once after it makes a sandbox live
(hangar.engine.workspace.sandboxes), so another host's count lags by the seconds between its check and
its start, not a heartbeat period: two hosts starting sandboxes of one org in the same second can both
pass, one over the cap, until either makes room again. When the org is full, this host's idle sandboxes
are hibernated first, then other hosts' through a task on their queue (`hibernate_idle`, on that host:
its own least recently used idle ones, then its heartbeat); a host that does not answer frees none."""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings

from hangar.accounts.selectors import owners_orgs
from hangar.conversations.host_selectors import hosts_all
from hangar.conversations.models import HostState
from hangar.conversations.slot_selectors import sessions_running
from hangar.logging import get_logger
from sandbox import census
from sandbox.protocol import SandboxError, SandboxUnavailable

if TYPE_CHECKING:
    from hangar.accounts.models import Org
    from hangar.conversations.models import Session
    from sandbox.manager import DockerSandboxes


log = get_logger(__name__)

WAIT_FOR_ROOM_S = 30.0
POLL_S = 1.0
REMOTE_TIMEOUT_S = 30.0  # one host's hibernations (a stop and a compaction each)


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


def make_room(session: Session, manager: DockerSandboxes) -> bool:
    """Make room among the org's (and its owners') live sandboxes, on every host, for `session`'s. False
    (nothing done) when it is live here already; True when it is to become live."""
    if manager.is_open(session.pk) or census.is_live(session.pk):
        return False
    shares = shares_of(session)
    deadline = time.monotonic() + WAIT_FOR_ROOM_S
    while True:
        with ExitStack() as locks:
            for share in shares:  # the org's lock first, then its owners' in their order
                locks.enter_context(census.org_lock(share.lock))
            full = _hibernate_for_room(session, manager, shares)
            if full is None:
                return True
        if time.monotonic() > deadline:
            raise SandboxUnavailable(
                f"{full.full}, all busy: try again when a session finishes, or ask the platform "
                "operator to raise the limit"
            )
        time.sleep(POLL_S)


def _hibernate_for_room(session: Session, manager: DockerSandboxes, shares: list[Share]) -> Share | None:
    """None when every share has room for one more live sandbox (after hibernating idle ones if needed,
    here first, then on other hosts); else the share whose live sandboxes are all busy. One Docker call
    and one registry read, plus a host task per other host that must free some."""
    orgs = set().union(*(share.orgs for share in shares))
    live = [s for s in census.live_of_orgs(manager.api, orgs) if s.session_id != session.pk]
    elsewhere = live_elsewhere(orgs)
    running: set[str] | None = None
    victims: list[census.Live] = []
    for share in shares:
        mine = [s for s in live if s.org_id in share.orgs and s not in victims]
        remote = {
            host: sum(n for org, n in counts.items() if org in share.orgs)
            for host, counts in elsewhere.items()
        }
        excess = len(mine) + sum(remote.values()) + 1 - share.cap
        if excess <= 0:
            continue
        if running is None:
            running = sessions_running([s.session_id for s in live])
        idle = [s for s in mine if s.session_id not in running]  # least recently active first
        victims.extend(idle[:excess])
        excess -= len(idle[:excess])
        for host, count in sorted(remote.items(), key=lambda item: -item[1]):
            if excess <= 0:
                break
            if count > 0:
                freed = _hibernate_on(host, share.orgs, min(excess, count), session)
                excess -= freed
                _forget_freed(elsewhere[host], share.orgs, freed)
        if excess > 0:
            return share
    for victim in victims:
        log.info("sandbox_hibernated_for_cap", session=victim.session_id, org=session.org_id)
        manager.hibernate(victim.session_id)
    return None


def live_elsewhere(orgs: set[str]) -> dict[str, dict[str, int]]:
    """{host: {org: live sandboxes}} of `orgs` on every other host that is not lost, as the hosts' last
    heartbeats reported them."""
    from hangar.engine.workspace.host_service import host_name

    here = host_name()
    out: dict[str, dict[str, int]] = {}
    for host in hosts_all():
        if host.name == here or host.state == HostState.LOST:
            continue
        counts = {
            str(org): int(n) for org, n in (host.org_live or {}).items() if str(org) in orgs and int(n) > 0
        }
        if counts:
            out[host.name] = counts
    return out


def _forget_freed(counts: dict[str, int], orgs: frozenset[str], freed: int) -> None:
    """Take `freed` hibernated sandboxes off a host's counts (for the next share judged in this pass)."""
    for org in sorted(counts):
        while freed > 0 and org in orgs and counts[org] > 0:
            counts[org] -= 1
            freed -= 1


def _hibernate_on(host: str, orgs: frozenset[str], count: int, session: Session) -> int:
    """Ask `host` to hibernate `count` idle sandboxes of `orgs`; how many it did (0 if it did not answer)."""
    from hangar.engine.workspace.host_names import HIBERNATE_IDLE
    from hangar.engine.workspace.remote import call_host

    try:
        answer = call_host(host, HIBERNATE_IDLE, [sorted(orgs), count, session.pk], timeout=REMOTE_TIMEOUT_S)
    except SandboxError:
        log.warning("cap_remote_hibernate_failed", host=host, org=session.org_id, exc_info=True)
        return 0
    done = [str(s) for s in answer.get("hibernated") or []]
    for session_id in done:
        log.info("sandbox_hibernated_for_cap", session=session_id, org=session.org_id, host=host)
    return len(done)


def hibernate_idle_here(
    manager: DockerSandboxes, orgs: set[str], count: int, keep: str
) -> tuple[list[str], int]:
    """On this host, for another host's make_room: hibernate up to `count` live sandboxes of `orgs` whose
    sessions are not running (never `keep`'s), least recently used first. (hibernated, still live).
    Takes no org lock: the asking host holds its own while it waits, and this host's make_room may be
    waiting on that host the same way."""
    live = [s for s in census.live_of_orgs(manager.api, orgs) if s.session_id != keep]
    running = sessions_running([s.session_id for s in live])
    done = []
    for victim in [s for s in live if s.session_id not in running][: max(0, count)]:
        manager.hibernate(victim.session_id)
        done.append(victim.session_id)
    return done, len(live) - len(done)
