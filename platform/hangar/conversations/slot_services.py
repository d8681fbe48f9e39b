"""Per-org run slots (hangar.engine.run.fairness): a session's lease is taken only while its org holds fewer
leases than its cap, so one org can never hold every worker thread.

Taking a slot is one call of the SQL function `hangar_lease_acquire_within_cap` (migration 0010): it
locks the org's row, counts the org's live leases, and takes the lease, in one transaction and one round
trip. The lock comes first and the count after it, in a statement of its own: under READ COMMITTED a
statement sees what was committed when it began, so a count in the locking statement could miss a lease
another acquirer committed while this one waited for the lock, and both would take the last slot (each
statement of the VOLATILE function takes its own snapshot). The lock is FOR NO KEY UPDATE: it serialises
acquirers of one org but does not conflict with the FOR KEY SHARE locks every insert referencing the org
takes (audit rows, messages), so a prompt in flight never waits for it, and no deadlock with a
transaction holding the session row can form.

Since anyone may create orgs, the slot is also taken only while each owner of an org on the default cap
holds fewer than `owner_cap` live leases across all the orgs they own (migration 0015: each owner's
advisory lock after the org's, then the counts): one account's five orgs share one cap, not five.
"""

from __future__ import annotations

from django.db import connection

CAPPED = "\0capped"  # the acquire's answer when the org is at its cap (a lease owner is never this)


def session_lease_acquire_within_cap(
    *, session_id: str, owner: str, ttl_s: int, default_cap: int, owner_cap: int = 0
) -> tuple[str | None, int | None]:
    """(answer, the session's org id). The answer is as `session_lease_acquire`'s (None: another runner
    holds it; else the previous owner), or CAPPED: the org holds its cap of live leases. A capped session
    keeps `run_requested`: it waits for a slot. (None, None): the session is gone. `owner_cap`: the most
    live leases one owner's orgs hold together (0: no such cap)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT previous_owner, capped, session_org"
            " FROM hangar_lease_acquire_within_cap(%s, %s, %s, %s, %s)",
            [session_id, owner, ttl_s, default_cap, owner_cap],
        )
        previous, capped, org_id = cursor.fetchone()
    return (CAPPED if capped else previous), org_id
