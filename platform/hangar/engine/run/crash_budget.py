"""A run that takes its worker down must not be re-run for ever.

When a worker dies mid-run (the OOM killer, a crash in a parser, a SIGKILL) its lease expires and beat's
recovery hands the session to another worker (hangar.engine.run.leases). If it was the run itself that killed
the worker, each recovery kills the next one, and every other tenant's runs on it with it. So each takeover
of an expired lease is counted on the session (`Session.run_takeovers`, reset whenever a run releases its
lease normally); at `HANGAR_RUN_CRASH_BUDGET` takeovers in a row (default 3) the session is not run again:
its open step is closed as aborted, `session.error` says why, the turn is audited as `crashed`, and the
session goes idle. A new prompt runs it again, with a fresh budget.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.db import transaction

from hangar.conversations import services as store
from hangar.conversations.events import publish
from hangar.conversations.loop_selectors import session_for_run
from hangar.conversations.loop_services import session_takeover_count
from hangar.conversations.run_audit_services import session_turn_audit
from hangar.engine.run.abort import finish_aborted_turn
from hangar.engine.session.subtasks import wake_parent
from hangar.logging import get_logger

log = get_logger(__name__)


def crash_budget() -> int:
    return max(1, settings.HANGAR_RUN_CRASH_BUDGET)


def over_budget(session_id: str, owner: str) -> int | None:
    """`owner` just took the session over from an expired lease: the number of runs in a row that ended
    without releasing it if that reaches the budget, else None (run it)."""
    takeovers = session_takeover_count(session_id=session_id, owner=owner)
    return takeovers if takeovers >= crash_budget() else None


def end_crash_looping(session_id: str, takeovers: int) -> None:
    """End the session's turn instead of running it a further time (the caller holds its lease)."""
    session = session_for_run(session_id)
    log.error("run_crash_budget_spent", session=session_id, takeovers=takeovers)
    message = (
        f"This session's run stopped its worker {takeovers} times in a row (the process running it died),"
        " so it was ended rather than run again. Check what the last step was doing (a very large file or"
        " output, a workspace configuration file) before you send a new message."
    )
    finish_aborted_turn(session, _set())  # the interrupted step is closed, its calls end as aborted
    publish(
        session,
        "session.error",
        {"sessionID": session_id, "error": {"name": "UnknownError", "data": {"message": message}}},
    )
    with transaction.atomic():
        store.session_status_set(session=session, status="idle")
        wake_parent(session)  # a task's child: its parent reads the failure
    session_turn_audit(session=session, outcome="crashed", steps=0)


def _set() -> threading.Event:
    event = threading.Event()
    event.set()
    return event
