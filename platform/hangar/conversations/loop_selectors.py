"""Reads for the session's runner, the worker that holds its lease (hangar.engine.run.leases), and for the
engine's background tasks (recovery, reaping).

Not scoped to an actor: no person is asking, the lease is the authority, and the session id came from
the run the platform itself enqueued. The loop re-reads its state at every step (seed 000 §3.2): those
per-step reads are fixed statements, prepared (hangar.rawsql), no ORM query building, rows turned into
the few fields the loop uses. The rest (a resumed step, a permission answer, an abort) are rare and use
the ORM.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Case, Q, When
from django.utils import timezone

from hangar.accounts.models import Org
from hangar.conversations.models import (
    ContextEpoch,
    Message,
    Part,
    PermissionGrant,
    PermissionRequest,
    Session,
    Todo,
)
from hangar.projects.models import Project
from hangar.rawsql import instances, run, select_list
from hangar.usage.gate import GATE_COLUMNS, GateRow, gate_params

_RUN_TABLES = ((Session, "s"), (Project, "p"), (Org, "o"))
_RUN_START = (
    f"SELECT {', '.join(select_list(model, alias) for model, alias in _RUN_TABLES)}"
    " FROM conversations_session s JOIN projects_project p ON p.id = s.project_id"
    " JOIN accounts_org o ON o.id = s.org_id WHERE s.id = %s"
)

# What a step needs, in one round trip and one JSON document: the permission layers, the messages after
# the caller's kept prefix (`after`), the parts of those the caller has not settled, how many messages the
# prefix spans now (the caller checks it still holds what it kept), and the policy stamp
# (hangar.engine.turn.live_policy), and the usage gate's allow-list and budgets (hangar.usage.gate: checked before
# the step's model call). Each open message's parts are a subquery of their own on the part's message
# key: written as a join, the planner could not know the session (a correlated parameter) and hashed the
# messages against a scan of the whole part table, a read that grew with every session ever stored
# (tests/conversations/test_loop_selectors.py).
_STEP_STATE = (
    "SELECT s.permission, p.permission_rules,"
    # the member layer: the rules of the person whose run it is (the last to prompt, else the creator)
    " (SELECT mb.permission_rules FROM accounts_membership mb"
    "  WHERE mb.org_id = s.org_id AND mb.user_id = coalesce(s.prompter_id, s.creator_id)),"
    " (SELECT coalesce(json_agg(json_build_array(m.id, m.role, m.data) ORDER BY m.id), '[]')"
    "  FROM conversations_message m WHERE m.session_id = s.id AND m.id > %(after)s),"
    " (SELECT coalesce(json_agg(json_build_array(m.id, (SELECT coalesce(json_agg(x.data ORDER BY x.id), '[]')"
    "    FROM conversations_part x WHERE x.message_id = m.id)) ORDER BY m.id), '[]')"
    "  FROM conversations_message m WHERE m.session_id = s.id AND m.id > %(after)s"
    "  AND NOT (m.id = ANY(%(settled)b::text[]))),"
    " (SELECT count(*) FROM conversations_message m WHERE m.session_id = s.id AND m.id <= %(after)s),"
    " greatest(p.updated_at, (SELECT o.updated_at FROM accounts_org o WHERE o.id = s.org_id)), "
    + GATE_COLUMNS
    + " FROM conversations_session s JOIN projects_project p ON p.id = s.project_id WHERE s.id = %(session)s"
)
_PARTS = (
    "SELECT message_id, data FROM conversations_part WHERE session_id = %s AND message_id = ANY(%s)"
    " ORDER BY id"
)


def session_for_run(session_id: str) -> Session:
    """The session with its project and org, as a run starts (what select_related gives, prepared)."""
    rows = run(_RUN_START, [session_id])
    if not rows:
        raise Session.DoesNotExist(session_id)
    session, project, org = instances(_RUN_TABLES, rows[0])
    session.project, session.org = project, org
    return session


@dataclass
class StepState:
    session_rules: list
    project_rules: list | dict
    messages: list[Message]  # oldest first
    parts: dict[str, list[dict]]  # of every message not in `settled`, in part order (possibly empty)
    policy_stamp: datetime | None = None  # the later of the project's and the org's updated_at
    before: int = 0  # how many messages the session holds up to `after` (step_state), as read
    gate: GateRow | None = None  # the usage gate's read for the step's call
    member_rules: list | None = None  # the member layer (hangar.engine.agents.permissions.merge)


def _json(value):
    return json.loads(value) if isinstance(value, (str, bytes)) else value


def step_state(session: Session, settled: list[str], after: str = "") -> StepState:
    """The session as a step starts, from the message after `after` on ("": every message). Messages are
    Message instances with id, role, data and `session` (the caller's instance, so that writing to a
    message never loads its session again)."""
    gate = gate_params(org_id=session.org_id, project_id=session.project_id, user_id=session.prompter_id)
    rows = run(_STEP_STATE, {"after": after, "settled": settled, "session": session.pk, **gate})
    if not rows:
        raise Session.DoesNotExist(session.pk)
    (
        session_rules,
        project_rules,
        member_rules,
        message_rows,
        part_rows,
        before,
        policy_stamp,
        allowed,
        budgets,
    ) = rows[0]
    messages = []
    for message_id, role, data in _json(message_rows):
        message = Message(id=message_id, session=session, role=role, data=data)
        message._state.adding, message._state.db = False, "default"  # a row from the database
        messages.append(message)
    # Every message not settled, with its parts in order (an empty list for a message with none).
    parts: dict[str, list[dict]] = dict(_json(part_rows))
    return StepState(
        _json(session_rules),
        _json(project_rules),
        messages,
        parts,
        policy_stamp,
        before,
        GateRow(allowed, budgets, gate["today"]),
        _json(member_rules) or [],
    )


def message_parts(session_id: str, message_ids: list[str]) -> dict[str, list[dict]]:
    """The parts of these messages (each list in part order), by message id; every id is a key."""
    parts: dict[str, list[dict]] = {message_id: [] for message_id in message_ids}
    if message_ids:
        for message_id, data in run(_PARTS, [session_id, message_ids]):
            parts[message_id].append(json.loads(data))
    return parts


class StepReader:
    """The session's messages and parts as its runner sees them, step after step. A settled message (a
    user message, stored with its parts in one transaction; a completed assistant step) can no longer
    change while the runner holds the lease: its parts are read once and kept, and so is the settled
    prefix of the history (the messages up to the first one still open). Each step reads only the
    messages after that prefix, so its cost does not grow with the session's history. The same read
    counts the messages the prefix spans in the database: a message committed late inside it (its id
    taken before a kept one's, its row written after) makes the count differ, and the reader starts over
    from a full read."""

    def __init__(self, session: Session):
        self.session = session
        self._settled: dict[str, list[dict]] = {}
        self._prefix: list[Message] = []  # settled, oldest first, with no open message among them
        self.messages: list[Message] = []  # as the last step read them

    def read(self) -> StepState:
        after = self._prefix[-1].pk if self._prefix else ""
        fresh = [pk for pk in self._settled if pk > after]
        state = step_state(self.session, settled=fresh, after=after)
        if state.before != len(self._prefix):
            self._prefix = []
            state = step_state(self.session, settled=list(self._settled))
        for m in state.messages:
            if m.pk in state.parts and (m.role == "user" or m.data["time"].get("completed")):
                self._settled[m.pk] = state.parts[m.pk]
        state.messages = self._prefix + state.messages
        self.messages = state.messages
        self._extend_prefix(len(self._prefix))
        return state

    def _extend_prefix(self, start: int) -> None:
        for m in self.messages[start:]:
            if m.pk not in self._settled:
                return
            self._prefix.append(m)

    def history(self, state: StepState) -> list[tuple[dict, list[dict]]]:
        """(message data, its parts) of every message of `state`, oldest first."""
        settled, parts = self._settled, state.parts
        return [(m.data, settled.get(m.pk) or parts.get(m.pk, [])) for m in state.messages]

    def parts_of(self, message: Message) -> list[dict]:
        """A message's parts: kept if settled, else read."""
        parts = self._settled.get(message.pk)
        return parts if parts is not None else message_parts(self.session.pk, [message.pk])[message.pk]


# --- the rarer reads: a resumed step, permission answers, an abort, the title ---------------------------


def tool_parts_of(message: Message) -> list[dict]:
    """The message's tool parts, in part order."""
    return [row.data for row in Part.objects.filter(message=message, type="tool").order_by("id")]


def step_start_and_tools(message: Message) -> list[tuple[str, dict]]:
    """(type, data) of the message's step-start and tool parts: what a resumed step closes with."""
    return list(
        Part.objects.filter(message=message, type__in=("step-start", "tool")).values_list("type", "data")
    )


def has_tool_parts(message: Message) -> bool:
    return Part.objects.filter(message=message, type="tool").exists()


def tool_part_by_call(message: Message, call_id: str) -> Part | None:
    return Part.objects.filter(message=message, type="tool", data__callID=call_id).first()


def recent_tool_parts(session_id: str, *, exclude: str, limit: int) -> list[dict]:
    """The session's latest `limit` tool parts other than `exclude`, newest first."""
    return list(
        Part.objects.filter(session_id=session_id, type="tool")
        .exclude(pk=exclude)
        .order_by("-id")
        .values_list("data", flat=True)[:limit]
    )


def grants_in_force(session: Session) -> list[tuple[str, str]]:
    """(permission, pattern) of the live "always" grants covering the session: the project's first, then
    the session's own (later rules win); other sessions' grants never load."""
    grants = (
        PermissionGrant.objects.filter(project_id=session.project_id, revoked_at__isnull=True)
        .filter(Q(scope="project") | Q(scope="session", session_id=session.pk))
        .order_by(Case(When(scope="project", then=0), default=1), "id")
    )
    return [(g.permission, g.pattern) for g in grants]


def permission_request_for_call(
    session_id: str, *, message_id: str, call_id: str, permission: str, patterns: list[str]
) -> PermissionRequest | None:
    """The latest request this call (of this message: call ids repeat across messages, `call_0` when a
    provider sends none) made for `permission` on `patterns` (answered or not)."""
    return (
        PermissionRequest.objects.filter(
            session_id=session_id,
            message_id=message_id,
            call_id=call_id,
            permission=permission,
            patterns=patterns,
        )
        .order_by("-id")
        .first()
    )


def permission_request_by_id(request_id: str) -> PermissionRequest | None:
    return PermissionRequest.objects.filter(pk=request_id).first()


def open_assistant_messages(session: Session) -> list[Message]:
    """The session's assistant messages not completed yet, oldest first, bound to `session`."""
    messages = [
        m
        for m in Message.objects.filter(session_id=session.pk, role="assistant").order_by("id")
        if not m.data["time"].get("completed")
    ]
    for message in messages:
        message.session = session  # no lazy load per message
    return messages


def prompt_without_answer(session_id: str) -> Message | None:
    """The session's latest prompt if no assistant message after it carries an error yet (a turn that
    failed must say so once), else None. None too for a session with no prompt."""
    user = Message.objects.filter(session_id=session_id, role="user").order_by("-id").first()
    if user is None:
        return None
    answers = Message.objects.filter(session_id=session_id, role="assistant", pk__gt=user.pk)
    if any(data.get("error") for data in answers.values_list("data", flat=True)):
        return None
    return user


def message_data(message: Message) -> dict:
    """The message's stored data (another writer, e.g. a tool part's event, may have changed it)."""
    message.refresh_from_db(fields=["data"])
    return message.data


def title_and_parent(session_id: str) -> tuple[str, str | None]:
    return Session.objects.filter(pk=session_id).values_list("title", "parent_id").get()


def todos_of(session_id: str) -> list[Mapping[str, object]]:
    return list(
        Todo.objects.filter(session_id=session_id)
        .order_by("position")
        .values("content", "status", "priority")
    )


def sessions_to_recover(*, stale_after_s: int = 30) -> list[str]:
    """Sessions whose runner died (lease expired) or whose run request was lost (flagged, no runner, not
    touched for `stale_after_s`)."""
    now = timezone.now()
    expired = Session.objects.filter(lease_expires_at__lt=now).exclude(lease_owner="")
    stale = Session.objects.filter(
        run_requested=True, lease_owner="", updated_at__lt=now - timedelta(seconds=stale_after_s)
    )
    ids = list(expired.values_list("id", flat=True)) + list(stale.values_list("id", flat=True))
    return list(dict.fromkeys(ids))


def session_exists(session_id: str) -> bool:
    """The session has not been deleted (the reaper keeps its workspace)."""
    return Session.objects.filter(pk=session_id).exists()


def session_is_archived(session_id: str) -> bool:
    """The session is archived (the reaper hibernates its sandbox and keeps the workspace)."""
    return Session.objects.filter(pk=session_id, archived_at__isnull=False).exists()


def sessions_existing(session_ids: Collection[str], *, archived: bool = False) -> set[str]:
    """Which of these sessions exist (`archived`: exist and are archived): the reaper's sweep asks once for
    every sandbox on the host, not once per sandbox (ten thousand hibernated ones were as many queries)."""
    ids, found = list(session_ids), set()
    for start in range(0, len(ids), 5000):
        rows = Session.objects.filter(pk__in=ids[start : start + 5000])
        found |= set(
            (rows.filter(archived_at__isnull=False) if archived else rows).values_list("pk", flat=True)
        )
    return found


_BOUND = (
    "(SELECT data->>'snapshot' FROM conversations_part WHERE session_id = %s AND type = '{kind}'"
    " AND message_id >= %s{until} AND data ? 'snapshot' ORDER BY id{desc} LIMIT 1)"
)


def snapshot_bounds(
    session_id: str, since: str | None = None, until: str | None = None
) -> tuple[str | None, str | None]:
    """(the first step-start's tree, the last step-finish's tree) of the messages with ids in
    [since, until) (OpenCode's `computeDiff` range): the trees a diff of those steps runs between."""
    bound = " AND message_id < %s" if until else ""
    first = _BOUND.format(kind="step-start", until=bound, desc="")
    last = _BOUND.format(kind="step-finish", until=bound, desc=" DESC")
    params = [session_id, since or "", *([until] if until else [])]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {first}, {last}", params + params)
        row = cursor.fetchone()
    return (row[0], row[1]) if row else (None, None)


_LAST_USER = (
    "(SELECT id FROM conversations_message WHERE session_id = %s AND role = 'user' ORDER BY id DESC LIMIT 1)"
)


@dataclass(frozen=True)
class DiffRanges:
    """The trees a run's diff summary runs between: the session's (first, last) and its last prompt's."""

    session: tuple[str | None, str | None]
    user_id: str | None
    prompt: tuple[str | None, str | None]


def diff_ranges(session_id: str) -> DiffRanges:
    """snapshot_bounds of the whole session and of its last prompt's answer, and that prompt: one read."""
    first = _BOUND.format(kind="step-start", until="", desc="")
    last = _BOUND.format(kind="step-finish", until="", desc=" DESC")
    prompt_first = first.replace("message_id >= %s", f"message_id >= {_LAST_USER}")
    prompt_last = last.replace("message_id >= %s", f"message_id >= {_LAST_USER}")
    sql = f"SELECT {first}, {last}, {_LAST_USER}, {prompt_first}, {prompt_last}"
    params = [session_id, "", session_id, "", session_id, session_id, session_id, session_id, session_id]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return DiffRanges((row[0], row[1]), row[2], (row[3], row[4]))


def context_epoch(session_id: str) -> ContextEpoch | None:
    """The session's current context epoch (its newest), if it has one: read once per run."""
    return ContextEpoch.objects.filter(session_id=session_id).order_by("-number").first()


def permission_requests_due(now: datetime, limit: int = 500) -> list[str]:
    """Pending requests whose headless policy's time is up (the expiry sweep's safety net)."""
    return list(
        PermissionRequest.objects.filter(status="pending", expires_at__lte=now)
        .order_by("expires_at")
        .values_list("pk", flat=True)[:limit]
    )
