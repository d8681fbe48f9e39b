"""Reads of the conversation store, scoped to the actor.

An actor sees the sessions of the org it acts in (`actor.org_id`), and only while its user is a member
(a token is additionally bound to its own org). A foreign or missing session is `Session.DoesNotExist`,
which the API turns into a 404: the two must look the same.
"""

from datetime import datetime

from django.db.models import Prefetch, QuerySet

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.conversations.models import (
    Event,
    Message,
    Part,
    PermissionGrant,
    PermissionRequest,
    QuestionRequest,
    Session,
    SessionDiff,
)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200
MAX_EVENTS = 1000
SESSION_ROLES = [role for role in Role.values if role != Role.AUDITOR]


def visible_sessions(actor: Actor) -> QuerySet[Session]:
    if actor.org_id is None:
        return Session.objects.none()
    sessions = Session.objects.filter(org_id=actor.org_id)
    if actor.token is not None and actor.token.org_id != actor.org_id:
        return Session.objects.none()
    if actor.user is not None:
        # An auditor reads the audit log and usage, not the sessions themselves.
        sessions = sessions.filter(
            org__memberships__user=actor.user, org__memberships__role__in=SESSION_ROLES
        )
    return sessions


def session_get(actor: Actor, session_id: str, *, project_id: int | None = None) -> Session:
    sessions = visible_sessions(actor)
    if project_id is not None:
        sessions = sessions.filter(project_id=project_id)
    return sessions.select_related("org").get(pk=session_id)


def sessions_list(
    actor: Actor,
    project_id: int,
    *,
    archived: bool | None = False,
    parent_id: str | None = None,
    roots_only: bool = False,
    search: str = "",
    updated_since: datetime | None = None,
    cursor: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[Session]:
    """Sessions of one project, newest first (session ids sort newest first). `cursor` is the last id
    of the previous page; `archived=None` means both."""
    sessions = visible_sessions(actor).filter(project_id=project_id)
    if archived is not None:
        sessions = sessions.filter(archived_at__isnull=not archived)
    if parent_id is not None:
        sessions = sessions.filter(parent_id=parent_id)
    elif roots_only:
        sessions = sessions.filter(parent__isnull=True)
    if search:
        sessions = sessions.filter(title__icontains=search)
    if updated_since is not None:
        sessions = sessions.filter(updated_at__gte=updated_since)
    if cursor:
        sessions = sessions.filter(pk__gt=cursor)
    limit = max(1, min(limit, MAX_LIMIT))
    return list(sessions.order_by("id")[:limit])


def sessions_recent(actor: Actor, *, limit: int = 10) -> list[Session]:
    """The org's newest live root sessions across its projects (the web app's home), newest first."""
    sessions = visible_sessions(actor).filter(archived_at__isnull=True, parent__isnull=True)
    return list(sessions.select_related("project").order_by("id")[: max(1, min(limit, MAX_LIMIT))])


def session_children(actor: Actor, session: Session) -> list[Session]:
    return list(visible_sessions(actor).filter(parent_id=session.pk).order_by("id"))


def last_message_id(session: Session) -> str | None:
    """The newest message's id (ids sort by time): a client-chosen id must sort after it."""
    return Message.objects.filter(session_id=session.pk).order_by("-id").values_list("id", flat=True).first()


def message_with_parts(message: Message) -> dict:
    """OpenCode's `{info, parts}` shape."""
    return {"info": message.data, "parts": [part.data for part in message.parts.all()]}


def messages_list(session: Session, *, limit: int | None = None) -> list[dict]:
    """The session's messages, oldest first, each as `{info, parts}`. `limit` keeps the most recent."""
    messages = Message.objects.filter(session=session).prefetch_related(
        Prefetch("parts", queryset=Part.objects.order_by("id"))
    )
    rows = list(messages.order_by("-id")[:limit])[::-1] if limit else list(messages.order_by("id"))
    return [message_with_parts(message) for message in rows]


def messages_page(
    session: Session, *, limit: int, before: str | None = None
) -> tuple[list[dict], str | None]:
    """The `limit` most recent messages older than message `before` (all, if None), oldest first, and the
    cursor for the page before them (the oldest id returned), None when nothing older is left. Message ids
    sort in creation order, so the cursor is a plain id bound."""
    messages = Message.objects.filter(session=session)
    if before:
        messages = messages.filter(pk__lt=before)
    rows = list(
        messages.prefetch_related(Prefetch("parts", queryset=Part.objects.order_by("id"))).order_by("-id")[
            : limit + 1
        ]
    )
    more = len(rows) > limit
    rows = rows[:limit][::-1]
    return [message_with_parts(message) for message in rows], (rows[0].pk if more and rows else None)


def message_get(session: Session, message_id: str) -> dict:
    message = (
        Message.objects.filter(session=session, pk=message_id)
        .prefetch_related(Prefetch("parts", queryset=Part.objects.order_by("id")))
        .get()
    )
    return message_with_parts(message)


class EventsPurged(Exception):
    """The events after the asked seq were partly deleted by the retention purge: the reader must reload
    the session's state (messages, parts) and resume from `last_seq`, not from its own cursor."""

    def __init__(self, purged_through: int, last_seq: int):
        super().__init__(f"Events up to seq {purged_through} were purged.")
        self.purged_through, self.last_seq = purged_through, last_seq


def events_after(session: Session | str, seq: int, limit: int = MAX_EVENTS) -> list[dict]:
    """Stored events with sequence number > `seq`, ascending, at most `limit` (the gap-fill read).
    Takes a Session the caller already resolved through `session_get`, or its id. Raises EventsPurged
    when some event after `seq` was purged (retention_services)."""
    session_id = session if isinstance(session, str) else session.pk
    limit = max(1, min(limit, MAX_EVENTS))
    rows = Event.objects.filter(session_id=session_id, seq__gt=seq).order_by("seq")[:limit]
    events = [
        {"seq": s, "type": t, "payload": p, "session": session_id}
        for s, t, p in rows.values_list("seq", "type", "payload")
    ]
    # Seqs are dense, so only a first row past seq + 1 (or none at all) can mean a purge: the mark is
    # read only then (from the Session the caller holds, or one indexed lookup).
    if not events or events[0]["seq"] != seq + 1:
        _raise_if_purged(session, seq)
    return events


def _raise_if_purged(session: Session | str, seq: int) -> None:
    if isinstance(session, Session):
        purged, last = session.events_purged_seq, session.event_seq
    else:
        row = Session.objects.filter(pk=session).values_list("events_purged_seq", "event_seq").first()
        if row is None:
            return
        purged, last = row
    if seq < purged:
        raise EventsPurged(purged, last)


def session_notice(session: Session) -> dict | None:
    """The latest thing the platform told the session about itself (a `session.notice` event: a move off
    a lost sandbox host) with its time in ms, for the session view to show again when opened; None if
    never told (or purged by retention). One read of event_notice_idx."""
    row = (
        Event.objects.filter(session_id=session.pk, type="session.notice")
        .order_by("-seq")
        .values_list("payload", "created_at")
        .first()
    )
    if row is None:
        return None
    payload, created_at = row
    return {**payload, "time": int(created_at.timestamp() * 1000)}


def permission_requests(
    *, org_id: int, project_id: int, session_id: str | None = None, pending_only: bool = False
) -> QuerySet[PermissionRequest]:
    """Permission requests of one project of one org (the caller has proven it may see that project),
    oldest first; narrowed to a session and/or to those still waiting for a reply."""
    requests = PermissionRequest.objects.filter(session__org_id=org_id, session__project_id=project_id)
    if session_id is not None:
        requests = requests.filter(session_id=session_id)
    if pending_only:
        requests = requests.filter(status="pending")
    return requests.select_related("session").order_by("id")


def question_requests(
    *, org_id: int, project_id: int, session_id: str | None = None, pending_only: bool = False
) -> QuerySet[QuestionRequest]:
    """The `question` tool's requests of one project of one org (the caller has proven it may see that
    project), oldest first; narrowed to a session and/or to those still waiting for an answer."""
    requests = QuestionRequest.objects.filter(session__org_id=org_id, session__project_id=project_id)
    if session_id is not None:
        requests = requests.filter(session_id=session_id)
    if pending_only:
        requests = requests.filter(status="pending")
    return requests.select_related("session").order_by("id")


def pending_requests(actor: Actor, limit: int) -> tuple[list[PermissionRequest], list[QuestionRequest]]:
    """What waits for a person across every session the actor may see (the app's notice): pending
    permission and question requests, oldest first, each list at most `limit` long, with their session."""
    sessions = visible_sessions(actor)
    permissions = PermissionRequest.objects.filter(status="pending", session__in=sessions)
    questions = QuestionRequest.objects.filter(status="pending", session__in=sessions)
    return (
        list(permissions.select_related("session").order_by("id")[:limit]),
        list(questions.select_related("session").order_by("id")[:limit]),
    )


def question_for_call(session_id: str, call_id: str) -> QuestionRequest | None:
    """The request a waiting `question` call made (the loop asks again when the run resumes)."""
    return QuestionRequest.objects.filter(session_id=session_id, call_id=call_id).first()


def todos_list(session: Session) -> list[dict]:
    """The session's todo list in OpenCode's Todo shape, in order."""
    return [
        {"content": t.content, "status": t.status, "priority": t.priority}
        for t in session.todos.order_by("position")
    ]


def permission_grant_get(*, project, grant_id: int) -> PermissionGrant:
    """A stored grant of `project` (already scoped to the actor's org); any other is
    `PermissionGrant.DoesNotExist` (a 404)."""
    return PermissionGrant.objects.get(pk=grant_id, project=project, org_id=project.org_id)


def session_org_id(session_id: str) -> int | None:
    """The org a session belongs to, unscoped: only for choosing the org a caller then acts in, before
    `session_get` checks the caller may see it (a WebSocket knows the session, not the org)."""
    return Session.objects.filter(pk=session_id).values_list("org_id", flat=True).first()


def finished_turn(session_id: str, *, after_message_id: str) -> dict | None:
    """The last assistant message after `after_message_id` once the session (already scoped by the
    caller) has gone idle and the message is complete or failed; else None."""
    session = Session.objects.only("status", "run_requested").get(pk=session_id)
    if session.status in ("busy", "retry") or session.run_requested:
        return None
    last = (
        Message.objects.filter(session_id=session_id, role="assistant", pk__gt=after_message_id)
        .order_by("-id")
        .first()
    )
    if last is None or not (last.data.get("time", {}).get("completed") or last.data.get("error")):
        return None
    return message_with_parts(last)


def session_diff(session: Session, message_id: str | None = None) -> list[dict]:
    """OpenCode's `GET /session/{id}/diff`: the session's stored diff (SnapshotFileDiff, with patches), or,
    for `message_id`, what answering that prompt changed (its `summary.diffs`; an assistant message
    stands for the prompt it answered). Raises Message.DoesNotExist for a message not of this session."""
    if message_id is None:
        stored = SessionDiff.objects.filter(session_id=session.pk).values_list("diffs", flat=True).first()
        return list(stored or [])
    data = Message.objects.filter(session=session, pk=message_id).values_list("data", flat=True).get()
    if data.get("role") == "assistant":
        parent = (
            Message.objects.filter(session=session, pk=data.get("parentID", ""))
            .values_list("data", flat=True)
            .first()
        )
        data = parent or {}
    return list((data.get("summary") or {}).get("diffs") or [])
