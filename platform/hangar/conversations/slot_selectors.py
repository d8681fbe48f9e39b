"""Reads of per-org fairness (hangar.engine.run.fairness): who waits for a run slot, whose session is running;
and what a lease keeper polls of running sessions: their abort flag and policy stamp (hangar.engine.run.leases,
hangar.engine.turn.live_policy). Not actor-scoped: the runner and the
engine's own bookkeeping ask, never a person."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

# Oldest first: a slot goes to the run that has waited longest (served by session_waiting_idx). Then as
# many of the longest waiters of the other orgs its owners own (on the default cap: they share the owners'
# cap, hangar.engine.run.fairness), in the same round trip.
_WAITING = (
    "(SELECT id FROM conversations_session WHERE org_id = %(org)s AND run_requested AND lease_owner = ''"
    " AND id <> %(exclude)s ORDER BY updated_at LIMIT %(limit)s)"
    " UNION ALL (SELECT s.id FROM conversations_session s WHERE s.org_id IN ("
    "  SELECT mo.org_id FROM accounts_membership m"
    "  JOIN accounts_membership mo ON mo.user_id = m.user_id AND mo.role = 'owner'"
    "  JOIN accounts_org o ON o.id = mo.org_id AND o.max_concurrent_runs IS NULL"
    "  WHERE m.org_id = %(org)s AND m.role = 'owner' AND mo.org_id <> %(org)s)"
    " AND s.run_requested AND s.lease_owner = '' ORDER BY s.updated_at LIMIT %(limit)s)"
)


def sessions_waiting_for_slot(*, org_id: int, exclude: str, limit: int) -> list[str]:
    """Sessions of the org with work requested and no runner (capped, or their task not taken yet), then
    as many of the other orgs sharing an owner with it."""
    with connection.cursor() as cursor:
        cursor.execute(_WAITING, {"org": org_id, "exclude": exclude, "limit": limit})
        return [row[0] for row in cursor.fetchall()]


# Per org, the oldest of the given sessions, as many as the org has free slots.
_WITHIN_FREE_SLOTS = (
    "SELECT id FROM (SELECT s.id, row_number() OVER (PARTITION BY s.org_id ORDER BY s.updated_at) AS n,"
    " coalesce(o.max_concurrent_runs, %s) - (SELECT count(*) FROM conversations_session r"
    "  WHERE r.org_id = s.org_id AND r.lease_owner <> '' AND r.lease_expires_at >= now()) AS free"
    " FROM conversations_session s JOIN accounts_org o ON o.id = s.org_id WHERE s.id = ANY(%s)) w"
    " WHERE n <= free ORDER BY id"
)


def sessions_within_free_slots(session_ids: list[str], *, default_cap: int) -> list[str]:
    """Of `session_ids`, per org the longest-waiting ones its free run slots could take now."""
    if not session_ids:
        return []
    with connection.cursor() as cursor:
        cursor.execute(_WITHIN_FREE_SLOTS, [default_cap, session_ids])
        return [row[0] for row in cursor.fetchall()]


def sessions_running(session_ids: list[str]) -> set[str]:
    """Those of `session_ids` a runner holds now (a live lease), or whose run is waiting to start."""
    if not session_ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM conversations_session WHERE id = ANY(%s)"
            " AND ((lease_owner <> '' AND lease_expires_at >= now()) OR run_requested)",
            [session_ids],
        )
        return {row[0] for row in cursor.fetchall()}


def leases_poll(owners: dict[str, str], *, using=None) -> dict[str, tuple[bool, datetime | None]]:
    """What a lease keeper reads every second, without writing: {session id: (abort requested, policy
    stamp)} for each session in `owners` (session id -> owner) whose lease that owner still holds; a
    missing id was taken away. The stamp is the later of its project's and org's updated_at. `using`: a
    psycopg connection of the caller's own (the lease keeper's), else Django's."""
    with (using or connection).cursor() as cursor:
        cursor.execute(  # ANY(ids), the owner compared here: cheaper than joining on unnest(ids, owners)
            "SELECT s.id, s.lease_owner, s.abort_requested, greatest(p.updated_at, o.updated_at)"
            " FROM conversations_session s JOIN projects_project p ON p.id = s.project_id"
            " JOIN accounts_org o ON o.id = s.org_id WHERE s.id = ANY(%s)",
            [list(owners)],
        )
        return {row[0]: (row[2], row[3]) for row in cursor.fetchall() if row[1] == owners[row[0]]}
