"""Writes of a session's context epochs (hangar.engine.turn.system_context): one row per epoch, written by the
session's runner only when a baseline starts or a context source's change is admitted (rare: nothing is
written on a turn whose context did not change). Fenced like the runner's other writes: a run that lost
its lease writes nothing (hangar.conversations.fence)."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction

from hangar.conversations.fence import owner_for
from hangar.conversations.models import ContextEpoch, Session
from hangar.conversations.services import now_ms


def _check_lease(session_id: str) -> None:
    """Raises (LeaseLost's SQLSTATE) if this run is fenced and another runner owns the session now."""
    owner = owner_for(session_id)
    if owner is not None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT hangar_lease_check(lease_owner, %s) FROM conversations_session WHERE id = %s",
                [owner, session_id],
            )


def epoch_start(
    *, session: Session, number: int, boundary: str, base: str, baseline: list[str], snapshot: dict[str, Any]
) -> ContextEpoch:
    with transaction.atomic():
        _check_lease(session.pk)
        return ContextEpoch.objects.create(
            session=session, number=number, boundary=boundary, base=base, baseline=baseline, snapshot=snapshot
        )


def epoch_admit(*, epoch: ContextEpoch, snapshot: dict[str, Any], after: str, text: str | None) -> None:
    """A mid-conversation system message (None: a change with nothing to tell) and the snapshot it
    brings the epoch to, in one statement (seed 001: the snapshot advances atomically with the durable
    message)."""
    epoch.snapshot = snapshot
    if text:
        epoch.updates = [*epoch.updates, {"after": after, "text": text, "time": now_ms()}]
    with transaction.atomic():
        _check_lease(epoch.session_id)
        epoch.save(update_fields=["snapshot", "updates"])
