"""Fenced writes: a run writes to its session only while it still owns the session's lease.

The worker (hangar.engine.run.worker) enters `fenced(session_id, owner)`; inside it every event append to
that session (hangar.conversations.events.publish_many, the path of every run write) carries the owner,
and the statement's session UPDATE calls `hangar_lease_check(lease_owner, owner)`, which raises when the
row's owner is someone else. Raising (not filtering) matters: the part and message rows ride in the same
statement as data-modifying CTEs, which Postgres executes whether or not the main UPDATE matches a row;
an error rolls the whole statement back. A run whose keeper was starved, or which has not yet noticed that
another worker took over, therefore writes nothing once the lease has moved (`LeaseLost`).

A contextvar, not a thread-local: a sub-thread that copies the context (the batch tool) stays fenced.
"""

from __future__ import annotations

import contextlib
import contextvars

# Raised by the SQL function hangar_lease_check (migration 0003).
LEASE_LOST_SQLSTATE = "HL001"

_fence: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("hangar_fence", default=None)


class LeaseLost(Exception):
    """This run's lease belongs to another runner now: stop without writing."""


@contextlib.contextmanager
def fenced(session_id: str, owner: str):
    token = _fence.set((session_id, owner))
    try:
        yield
    finally:
        _fence.reset(token)


def owner_for(session_id: str) -> str | None:
    """The lease owner writes to `session_id` must carry in this context, or None (not fenced)."""
    fence = _fence.get()
    return fence[1] if fence and fence[0] == session_id else None


def lease_lost(exc: BaseException) -> bool:
    """Whether a database error is the fence refusing a write."""
    cause: BaseException | None = exc
    while cause is not None:
        if getattr(cause, "sqlstate", None) == LEASE_LOST_SQLSTATE:
            return True
        cause = cause.__cause__
    return False
