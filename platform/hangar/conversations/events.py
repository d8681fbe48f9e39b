"""The one path by which anything happens to a session is told to the world.

`publish()` appends to the durable event log inside the caller's transaction, taking the next dense
sequence number under the session row lock (so commit order equals seq order), and notifies the
session's channel group once the transaction commits. Readers that miss a notification (the channel
layer is not durable) fetch the gap from Postgres by seq.

`publish_ephemeral()` is the separate path for token deltas: never stored, marked `ephemeral`, so
clients can tell them apart; losing one is harmless because the part's final text is persisted.
"""

from django.db import connection, transaction

from hangar.conversations.models import Event, Session

SESSION_GROUP = "session.{id}"
PROJECT_GROUP = "project.{id}"  # every event of the project's sessions (OpenCode's /event stream)
ORG_GROUP = "org.{id}"  # session-list changes only


def session_group(session_id: str) -> str:
    return SESSION_GROUP.format(id=session_id)


def project_group(project_id: int) -> str:
    return PROJECT_GROUP.format(id=project_id)


def org_group(org_id: int) -> str:
    return ORG_GROUP.format(id=org_id)


def _next_seq(session_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET event_seq = event_seq + 1 WHERE id = %s RETURNING event_seq",
            [session_id],
        )
        row = cursor.fetchone()
    if row is None:
        raise Session.DoesNotExist(session_id)
    return row[0]


def publish(session: Session, type: str, payload: dict, *, org_wide: bool = False) -> Event:
    """Append an event and broadcast it after commit. `org_wide` also tells the org's session-list
    stream (session.created/updated/deleted)."""
    from hangar.realtime.broadcast import broadcast  # late: keeps the store free of Channels at import

    with transaction.atomic():
        seq = _next_seq(session.pk)
        event = Event.objects.create(session_id=session.pk, seq=seq, type=type, payload=payload)
        message = {"seq": seq, "type": type, "payload": payload, "session": session.pk}
        groups = [session_group(session.pk), project_group(session.project_id)]
        if org_wide:
            groups.append(org_group(session.org_id))
        transaction.on_commit(lambda: broadcast(groups, message))
    return event


def publish_ephemeral(session: Session, type: str, payload: dict) -> None:
    """Send a not-stored notification (token deltas). Sent immediately, outside any transaction."""
    from hangar.realtime.broadcast import broadcast

    message = {"seq": None, "ephemeral": True, "type": type, "payload": payload, "session": session.pk}
    broadcast([session_group(session.pk), project_group(session.project_id)], message)
