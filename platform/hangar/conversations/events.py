"""The one path by which anything happens to a session is told to the world.

`publish()` appends to the durable event log inside the caller's transaction, taking the next dense
sequence number under the session row lock (so commit order equals seq order), and notifies the
session's channel group once the transaction commits. Readers that miss a notification (the channel
layer is not durable) fetch the gap from Postgres by seq.

`publish_many()` appends several events of one session with ONE statement: it reserves N numbers with
`event_seq = event_seq + N RETURNING` and inserts the N rows from that, so a step boundary that tells
two things (a part and its message) costs one round trip, not 2N. `with_write` lets a store service put
its own row write (a part upsert, a message update) into that same statement as a data-modifying CTE:
the write, the seq bump and the events then commit or fail together even without an outer transaction
(one statement is atomic), which saves the BEGIN/SAVEPOINT/RELEASE/COMMIT round trips that dominated
the worker's CPU per step (measured: ~12 queries per part boundary before, 1 now).

`publish_ephemeral()` is the separate path for token deltas: never stored, marked `ephemeral`, so
clients can tell them apart; losing one is harmless because the part's final text is persisted.
"""

import json

from django.db import connection, transaction
from django.utils import timezone

from hangar.conversations.models import Event, Session

SESSION_GROUP = "session.{id}"
PROJECT_GROUP = "project.{id}"  # every event of the project's sessions (OpenCode's /event stream)
ORG_GROUP = "org.{id}"  # session-list changes only

# The row lock taken by the UPDATE is held until the statement's transaction commits: a concurrent
# publisher waits, so seqs commit in order and stay dense (the INSERT fails the whole statement, bump
# included, if anything is wrong). `now()` is the transaction's start, as Django's auto_now_add would be.
_APPEND = (
    "{write}s AS (UPDATE conversations_session SET event_seq = event_seq + %s WHERE id = %s{gate} RETURNING event_seq)"
    " INSERT INTO conversations_event (session_id, seq, type, payload, created_at)"
    " SELECT %s, s.event_seq - %s + e.n, e.type, e.payload, now()"
    " FROM s, unnest(%s::text[], %s::jsonb[]) WITH ORDINALITY AS e(type, payload, n)"
    " RETURNING id, seq"
)


def session_group(session_id: str) -> str:
    return SESSION_GROUP.format(id=session_id)


def project_group(project_id: int) -> str:
    return PROJECT_GROUP.format(id=project_id)


def org_group(org_id: int) -> str:
    return ORG_GROUP.format(id=org_id)


def publish(session: Session, type: str, payload: dict, *, org_wide: bool = False,
            with_write: tuple[str, list] | None = None) -> Event:
    """Append an event and broadcast it after commit. `org_wide` also tells the org's session-list
    stream (session.created/updated/deleted)."""
    return publish_many(session, [(type, payload)], org_wide=org_wide, with_write=with_write)[0]


def publish_many(session: Session, events: list[tuple[str, dict]], *, org_wide: bool = False,
                 with_write: tuple[str, list] | None = None) -> list[Event]:
    """Append `events` ((type, payload), in order) with consecutive seqs in one statement; broadcast each
    after commit. `with_write` = (sql, params) of one data-modifying statement with `RETURNING 1` run in
    the same statement (as the CTE `w`); the events are appended only if it touched a row, else
    `Session.DoesNotExist`-like failure is raised as `LookupError` and nothing is written."""
    from hangar.realtime.broadcast import broadcast  # late: keeps the store free of Channels at import

    n = len(events)
    types = [t for t, _ in events]
    payloads = [json.dumps(p) for _, p in events]
    write_sql, write_params = with_write if with_write else ("", [])
    sql = _APPEND.format(write=f"WITH w AS ({write_sql}), " if write_sql else "WITH ",
                         gate=" AND EXISTS (SELECT 1 FROM w)" if write_sql else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, [*write_params, n, session.pk, session.pk, n, types, payloads])
        rows = sorted(cursor.fetchall(), key=lambda r: r[1])
    if len(rows) != n:
        if write_sql and Session.objects.filter(pk=session.pk).exists():
            raise LookupError(f"write for {types} matched no row")
        raise Session.DoesNotExist(session.pk)
    now = timezone.now()
    out = [Event(id=pk, session_id=session.pk, seq=seq, type=type, payload=payload, created_at=now)
           for (pk, seq), (type, payload) in zip(rows, events, strict=True)]
    groups = [session_group(session.pk), project_group(session.project_id)]
    if org_wide:
        groups.append(org_group(session.org_id))
    messages = [{"seq": e.seq, "type": e.type, "payload": e.payload, "session": session.pk} for e in out]

    def notify():
        for message in messages:
            broadcast(groups, message)

    # In autocommit (no outer atomic) this runs now: the statement above has already committed.
    transaction.on_commit(notify)
    return out


def publish_ephemeral(session: Session, type: str, payload: dict) -> None:
    """Send a not-stored notification (token deltas). Sent immediately, outside any transaction."""
    from hangar.realtime.broadcast import broadcast

    message = {"seq": None, "ephemeral": True, "type": type, "payload": payload, "session": session.pk}
    broadcast([session_group(session.pk), project_group(session.project_id)], message)
