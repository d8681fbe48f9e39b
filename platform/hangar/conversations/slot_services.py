"""Per-org run slots (hangar.engine.fairness): a session's lease is taken only while its org holds fewer
leases than its cap, so one org can never hold every worker thread.

Taking a slot is three statements in one transaction: lock the org's row, count the org's live leases,
take the lease. The lock comes first and the count after it, in a statement of its own: under READ
COMMITTED a statement sees what was committed when it began, so a count in the locking statement could
miss a lease another acquirer committed while this one waited for the lock, and both would take the last
slot. The lock is FOR NO KEY UPDATE: it serialises acquirers of one org but does not conflict with the
FOR KEY SHARE locks every insert referencing the org takes (audit rows, messages), so a prompt in flight
never waits for it, and no deadlock with a transaction holding the session row can form.
"""

from __future__ import annotations

from django.db import connection, transaction

from hangar.conversations.loop_services import session_lease_acquire

CAPPED = "\0capped"  # the acquire's answer when the org is at its cap (a lease owner is never this)

_LOCK_ORG = (
    "SELECT o.id, coalesce(o.max_concurrent_runs, %s) FROM accounts_org o"
    " WHERE o.id = (SELECT org_id FROM conversations_session WHERE id = %s) FOR NO KEY UPDATE OF o"
)
_HELD = (
    "SELECT count(*) FROM conversations_session WHERE org_id = %s AND lease_owner <> ''"
    " AND lease_expires_at >= now() AND id <> %s"
)


def session_lease_acquire_within_cap(
    *, session_id: str, owner: str, ttl_s: int, default_cap: int
) -> tuple[str | None, int | None]:
    """(answer, the session's org id). The answer is as `session_lease_acquire`'s (None: another runner
    holds it; else the previous owner), or CAPPED: the org holds its cap of live leases. A capped session
    keeps `run_requested`: it waits for a slot. (None, None): the session is gone."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_LOCK_ORG, [default_cap, session_id])
        row = cursor.fetchone()
        if row is None:
            return None, None
        org_id, cap = row
        cursor.execute(_HELD, [org_id, session_id])
        if cursor.fetchone()[0] >= cap:
            return CAPPED, org_id
        return session_lease_acquire(session_id=session_id, owner=owner, ttl_s=ttl_s), org_id
