"""Writes of the session's runner, the worker that holds its lease (hangar.engine.run.leases): the lease
itself, and what an aborted turn leaves behind. Not actor-scoped (the lease is the authority); a change
a person could have made (a permission request answered) is audited as the system's.

The lease statements are raw SQL on purpose: each is one conditional UPDATE, and the renewal carries every
lease a worker process holds in a single statement (one DB connection for all of its sessions).
"""

from __future__ import annotations

from django.db import connection, transaction

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish_many
from hangar.conversations.models import PermissionRequest, Session
from hangar.conversations.services import message_create, now_ms

RUNNER_LABEL = "runner"


def session_lease_acquire(*, session_id: str, owner: str, ttl_s: int) -> str | None:
    """Take the lease if free or expired; clears run_requested (this runner will see the new work).
    Returns None if another runner holds it, else the previous owner ('' if the lease was free; a name
    if it had expired: that runner died or stalled, and its commands may still run in the sandbox)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session AS s SET lease_owner = %s, run_requested = false,"
            " lease_expires_at = now() + make_interval(secs => %s)"
            " FROM (SELECT id, lease_owner FROM conversations_session WHERE id = %s FOR UPDATE) AS prev"
            " WHERE s.id = prev.id"
            " AND (s.lease_owner = '' OR s.lease_expires_at IS NULL OR s.lease_expires_at < now())"
            " RETURNING prev.lease_owner",
            [owner, ttl_s, session_id],
        )
        row = cursor.fetchone()
    return None if row is None else row[0]


def session_lease_take(*, session_id: str, owner: str, ttl_s: int) -> bool:
    """Take a busy session's lease whoever holds it (its sandbox host was lost: hangar.engine.run.host_loss).
    A runner still holding it loses it: its keeper's next renewal misses, and its writes are fenced."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET lease_owner = %s, run_requested = false,"
            " lease_expires_at = now() + make_interval(secs => %s) WHERE id = %s AND status = 'busy'"
            " RETURNING id",
            [owner, ttl_s, session_id],
        )
        return cursor.fetchone() is not None


def session_takeover_count(*, session_id: str, owner: str) -> int:
    """`owner` took the session over from a runner whose lease expired: count it; returns how many runs
    in a row have now ended without releasing the lease (their worker died or stalled)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET run_takeovers = run_takeovers + 1"
            " WHERE id = %s AND lease_owner = %s RETURNING run_takeovers",
            [session_id, owner],
        )
        row = cursor.fetchone()
    return row[0] if row else 0


def session_lease_release(*, session_id: str, owner: str) -> bool:
    """Give the lease back; returns True if work was requested meanwhile (the caller re-enqueues). A run
    that releases its lease did not take its worker down: the takeover count starts again."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET lease_owner = '', lease_expires_at = NULL, run_takeovers = 0"
            " WHERE id = %s AND lease_owner = %s RETURNING run_requested",
            [session_id, owner],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


def session_leases_renew(*, owners: dict[str, str], ttl_s: int, using=None) -> set[str]:
    """Extend every lease in `owners` (session id → owner) still held by that owner, in one statement.
    Returns the renewed ids; a missing id was taken away. `using`: a psycopg connection of the caller's
    own (the lease keeper's), else Django's."""
    ids = list(owners)
    with (using or connection).cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session AS s SET lease_expires_at = now() + make_interval(secs => %s)"
            " FROM unnest(%s::text[], %s::text[]) AS h(id, owner)"
            " WHERE s.id = h.id AND s.lease_owner = h.owner RETURNING s.id",
            [ttl_s, ids, [owners[i] for i in ids]],
        )
        return {row[0] for row in cursor.fetchall()}


def session_abort_clear(*, session_id: str) -> None:
    """The abort was carried out (or the run crashed): a stale flag would abort the next prompt at once."""
    Session.objects.filter(pk=session_id).update(abort_requested=False)


def permission_requests_reject_pending(*, session: Session) -> list[str]:
    """An aborted turn answers its pending permission requests "reject": each is audited (as the
    system's, like a person's reply) and announced with `permission.replied`. Returns their ids."""
    actor = system_actor(session.org_id, RUNNER_LABEL)
    with transaction.atomic():
        pending = list(
            PermissionRequest.objects.select_for_update().filter(session_id=session.pk, status="pending")
        )
        if not pending:
            return []
        PermissionRequest.objects.filter(pk__in=[r.pk for r in pending]).update(status="reject")
        for request in pending:
            audit_record(
                actor=actor,
                action="permission.reply",
                target=request,
                data={"reply": "reject", "reason": "abort", "permission": request.permission},
            )
        publish_many(
            session,
            [
                ("permission.replied", {"sessionID": session.pk, "requestID": r.pk, "reply": "reject"})
                for r in pending
            ],
        )
    return [r.pk for r in pending]


def synthetic_user_message(*, session: Session, agent: str, text: str) -> None:
    """A user message the runner writes on the person's behalf after they approved an agent switch
    (plan_exit / plan_enter): the next step runs as `agent`, and the session's agent becomes it."""
    with transaction.atomic():
        data = {"role": "user", "time": {"created": now_ms()}, "agent": agent, "model": dict(session.model)}
        message_create(session=session, data=data, parts=[{"type": "text", "text": text, "synthetic": True}])
        Session.objects.filter(pk=session.pk).update(agent=agent)
        session.agent = agent
