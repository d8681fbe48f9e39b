"""Per-org fair shares of the shared workers: a cap on an org's concurrent runs, and a fair queue.

A run request is a Celery task like any other. The task takes its session's lease only while the org
holds fewer leases than its cap (`Org.max_concurrent_runs`, else settings.HANGAR_ORG_MAX_RUNS); at the
cap it returns at once, so it never occupies a worker thread while it waits, and another org's task
behind it in the queue starts without waiting for the flood to drain. The capped session keeps
`run_requested` and its busy status: it is queued, not lost. When a run of the org ends, its worker
enqueues the org's longest-waiting sessions; beat's `recover_expired_runs` re-sends any request still
waiting after its stale period, so a wake-up lost with a dying worker cannot leave a session stuck.

Anyone may create orgs, so the caps are also per person: an org on the default cap counts against each
of its owners, and one owner's orgs together hold at most HANGAR_USER_MAX_RUNS runs (the SQL function
checks it with the org's cap, in the same round trip). Per owner rather than per prompter because
ownership is what an account gets for free and what HANGAR_USER_MAX_OWNED_ORGS bounds, while who starts
the work (a member, an API token, a webhook, Slack) is the owner's to choose; an org the operator gave
its own cap is judged by that cap alone. A run that ends also wakes its owners' other orgs' waiters.

Live sandboxes have their own cap (hangar.engine.workspace.sandbox_share).
"""

from __future__ import annotations

from django.conf import settings

from hangar.conversations.slot_selectors import sessions_waiting_for_slot, sessions_within_free_slots
from hangar.conversations.slot_services import CAPPED, session_lease_acquire_within_cap
from hangar.engine.run.leases import LEASE_TTL_S
from hangar.engine.session.enqueue import enqueue_run
from hangar.logging import get_logger

log = get_logger(__name__)

# Sessions woken per ended run: one takes the freed slot; a second covers the slot another run of the org
# freed at the same moment (both enders read the same longest waiter). A woken task that finds the org
# at its cap again returns at once and the session keeps waiting.
WAKE_PER_RELEASE = 2


class Capped(Exception):
    """The org holds its cap of concurrent runs: the session waits for a slot."""


def lease_acquire_fair(session_id: str, owner: str) -> tuple[str | None, int | None]:
    """As hangar.engine.run.leases.lease_acquire, within the org's cap, with the session's org id; raises
    Capped at the cap."""
    previous, org_id = session_lease_acquire_within_cap(
        session_id=session_id,
        owner=owner,
        ttl_s=LEASE_TTL_S,
        default_cap=settings.HANGAR_ORG_MAX_RUNS,
        owner_cap=settings.HANGAR_USER_MAX_RUNS,
    )
    if previous == CAPPED:
        raise Capped(session_id)
    return previous, org_id


def wake_waiting(org_id: int, ended: str) -> None:
    """A run of the org ended: its slot goes to the org's longest-waiting sessions."""
    try:
        waiting = sessions_waiting_for_slot(org_id=org_id, exclude=ended, limit=WAKE_PER_RELEASE)
    except Exception:  # beat's recovery still finds them; the run that ended must not fail for this
        log.warning("wake_waiting_failed", org=org_id, exc_info=True)
        return
    for session_id in waiting:
        enqueue_run(session_id)


def recoverable(session_ids: list[str]) -> list[str]:
    """Of the sessions beat's recovery found (a dead runner, a lost or waiting request), those a run slot
    could take now: an org with a thousand runs queued at its cap is not sent a thousand tasks every
    recovery tick, only as many as it has free slots."""
    return sessions_within_free_slots(session_ids, default_cap=settings.HANGAR_ORG_MAX_RUNS)
