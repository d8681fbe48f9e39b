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
the worker's CPU per step (measured: ~12 queries per part boundary before, 1 now). `with_writes` takes
several such writes (a step's closing parts and its message), and `session_set` folds columns of the
session row into the seq bump itself (a row may be updated only once per statement), so a whole step
boundary is one round trip to Postgres and, after commit, one to Redis.

`publish_ephemeral()` is the separate path for token deltas: never stored, marked `ephemeral`, so
clients can tell them apart; losing one is harmless because the part's final text is persisted.
"""

from typing import Protocol

from django.db import DatabaseError, transaction
from django.utils import timezone

from hangar.conversations import jsonsafe
from hangar.conversations.fence import LeaseLost, lease_lost, owner_for
from hangar.conversations.models import Event, Session
from hangar.logging import get_logger
from hangar.rawsql import run as sql_run

log = get_logger(__name__)

SESSION_GROUP = "session.{id}"
PROJECT_GROUP = "project.{id}"  # every event of the project's sessions (OpenCode's /event stream)
ORG_GROUP = "org.{id}"  # session-list changes only

# The row lock taken by the UPDATE is held until the statement's transaction commits: a concurrent
# publisher waits, so seqs commit in order and stay dense (the INSERT fails the whole statement, bump
# included, if anything is wrong). `now()` is the transaction's start, as Django's auto_now_add would be.
_APPEND = (
    "{writes}s AS (UPDATE conversations_session SET event_seq = event_seq + %s{set}"
    " WHERE id = %s{fence}{gate} RETURNING event_seq)"
    " INSERT INTO conversations_event (session_id, seq, type, payload, created_at)"
    " SELECT %s, s.event_seq - %s + e.n, e.type, e.payload, now()"
    " FROM s, unnest(%b::text[], %b::jsonb[]) WITH ORDINALITY AS e(type, payload, n)"
    " RETURNING id, seq"
)


def _statement(
    writes: list[tuple[str, list]], session_set: tuple[str, list] | None, fenced: bool
) -> tuple[str, list, list]:
    """The SQL around the event append: each write as CTE `w<i>`, all of which must touch a row; when
    `fenced`, the session's lease owner is checked (hangar.conversations.fence) by the same UPDATE."""
    ctes = "".join(f"w{i} AS ({sql}), " for i, (sql, _params) in enumerate(writes))
    gate = "".join(f" AND EXISTS (SELECT 1 FROM w{i})" for i in range(len(writes)))
    set_sql, set_params = session_set if session_set else ("", [])
    sql = _APPEND.format(
        writes=f"WITH {ctes}",
        set=f", {set_sql}" if set_sql else "",
        fence=" AND hangar_lease_check(lease_owner, %s)" if fenced else "",
        gate=gate,
    )
    return sql, [p for _sql, params in writes for p in params], set_params


class EventSink(Protocol):
    """Who tells the world about events once they are stored: `broadcast_many` gets the committed events of
    one session, in seq order; `broadcast` one ephemeral notification. Must not block on the network."""

    def broadcast(self, groups: list[str], message: dict) -> None: ...

    def broadcast_many(self, groups: list[str], messages: list[dict]) -> None: ...


class _NoSink:
    """Until a sink registers (a process without the realtime app), events are only stored: readers fill
    gaps from Postgres by seq, so nothing is lost, only not pushed."""

    def broadcast(self, groups: list[str], message: dict) -> None:
        pass

    def broadcast_many(self, groups: list[str], messages: list[dict]) -> None:
        pass


_sink: EventSink = _NoSink()


def set_sink(sink: EventSink) -> None:
    """Register where committed events go (the realtime layer does, at app ready): the store publishes
    through it without importing the layer above it."""
    global _sink
    _sink = sink


# Integrations (outbound webhooks, Slack status) listen to stored events too, without the store importing
# them. A listener is called inside the publishing transaction with (session, events) and must only
# filter by type and schedule its work on commit (robust: the broker may be down): it runs in the agent
# step, and what it raises is logged, never passed to the step.
_listeners: list = []


def listener_register(listener) -> None:
    """Add `listener(session, events: list[Event])`, called for every stored batch of events."""
    if listener not in _listeners:
        _listeners.append(listener)


# Requests waiting for a person (and their settling) also reach the org's stream: the web app shows them
# as a notice wherever the person is, not only in the session that asked.
ORG_NOTICES = frozenset(
    {"permission.asked", "permission.replied", "question.asked", "question.replied", "question.rejected"}
)


def session_group(session_id: str) -> str:
    return SESSION_GROUP.format(id=session_id)


def project_group(project_id: int) -> str:
    return PROJECT_GROUP.format(id=project_id)


def org_group(org_id: int) -> str:
    return ORG_GROUP.format(id=org_id)


def publish(
    session: Session,
    type: str,
    payload: dict,
    *,
    org_wide: bool = False,
    with_write: tuple[str, list] | None = None,
) -> Event:
    """Append an event and broadcast it after commit. `org_wide` also tells the org's session-list
    stream (session.created/updated/deleted)."""
    return publish_many(
        session, [(type, payload)], org_wide=org_wide, with_writes=[with_write] if with_write else ()
    )[0]


def publish_many(
    session: Session,
    events: list[tuple[str, dict]],
    *,
    org_wide: bool = False,
    with_writes: list[tuple[str, list]] | tuple = (),
    session_set: tuple[str, list] | None = None,
) -> list[Event]:
    """Append `events` ((type, payload), in order) with consecutive seqs in one statement; broadcast them
    after commit. `with_writes` = (sql, params) of data-modifying statements with `RETURNING 1`, run in
    the same statement (as CTEs); the events are appended only if every one touched a row, else a
    `LookupError` is raised and nothing is written. `session_set` = ("col = %s, ...", params): columns of
    the session row set by the same UPDATE that bumps its seq."""
    n = len(events)
    types = [t for t, _ in events]
    payloads = [jsonsafe.dumps(p) for _, p in events]
    owner = owner_for(session.pk)
    sql, write_params, set_params = _statement(list(with_writes), session_set, owner is not None)
    fence_params = [owner] if owner is not None else []
    try:
        rows = sql_run(
            sql, [*write_params, n, *set_params, session.pk, *fence_params, session.pk, n, types, payloads]
        )
    except DatabaseError as exc:
        if lease_lost(exc):
            raise LeaseLost(session.pk) from exc
        raise
    rows.sort(key=lambda r: r[1])
    if len(rows) != n:
        if with_writes and Session.objects.filter(pk=session.pk).exists():
            raise LookupError(f"write for {types} matched no row")
        raise Session.DoesNotExist(session.pk)
    now = timezone.now()
    out = [
        Event(id=pk, session_id=session.pk, seq=seq, type=type, payload=payload, created_at=now)
        for (pk, seq), (type, payload) in zip(rows, events, strict=True)
    ]
    groups = [session_group(session.pk), project_group(session.project_id)]
    if org_wide or not ORG_NOTICES.isdisjoint(types):
        groups.append(org_group(session.org_id))
    messages = [{"seq": e.seq, "type": e.type, "payload": e.payload, "session": session.pk} for e in out]
    # In autocommit (no outer atomic) this runs now: the statement above has already committed.
    sink = _sink
    transaction.on_commit(lambda: sink.broadcast_many(groups, messages))
    for listener in _listeners:
        _notify(listener, session, out)
    return out


def _notify(listener, session: Session, events: list[Event]) -> None:
    """A listener's own failure (its broker or cache is down: Redis restarting) must not fail the write
    whose events are already stored: raised into the agent step it crashed a run that had finished, and the
    crash report stored a second idle (tests/faults/test_redis_restart.py). Logged; the log stays whole."""
    try:
        listener(session, events)
    except Exception:
        log.warning(
            "event_listener_failed",
            session=session.pk,
            listener=getattr(listener, "__module__", ""),
            exc_info=True,
        )


def publish_ephemeral(session: Session, type: str, payload: dict) -> None:
    """Send a not-stored notification (token deltas). Sent immediately, outside any transaction."""
    message = {"seq": None, "ephemeral": True, "type": type, "payload": payload, "session": session.pk}
    _sink.broadcast([session_group(session.pk), project_group(session.project_id)], message)
