"""What a worker does with one run request: take the session's lease or return (idempotent), run the
loop, release, re-enqueue if work arrived meanwhile. Called by the Celery task; tests may call it
directly."""

from __future__ import annotations

import threading

from django.db import close_old_connections, transaction

from hangar.conversations import services as store
from hangar.conversations.fence import LeaseLost, fenced
from hangar.conversations.loop_selectors import session_for_run
from hangar.conversations.loop_services import session_abort_clear
from hangar.engine.run.crash_budget import end_crash_looping, over_budget
from hangar.engine.run.failures import crash_error, turn_failed
from hangar.engine.run.fairness import Capped, lease_acquire_fair, wake_waiting
from hangar.engine.run.leases import keeper, lease_release, new_owner
from hangar.engine.run.loop import Loop
from hangar.engine.session.dbconn import release_connection
from hangar.engine.session.enqueue import enqueue_run
from hangar.engine.session.subtasks import wake_parent
from hangar.logging import get_logger

log = get_logger(__name__)


def run_session_once(session_id: str) -> bool:
    """Returns True if this call ran the loop (False: another runner holds the session)."""
    close_old_connections()
    owner = new_owner()
    try:
        previous, org_id = lease_acquire_fair(session_id, owner)
    except Capped:  # the org holds its share of runs: the session waits for a slot (engine/fairness.py)
        log.info("run_waits_for_org_slot", session=session_id)
        return False
    if previous is None:
        return False
    abort = threading.Event()
    lost = keeper.hold(session_id, owner, abort)
    try:
        with fenced(session_id, owner):  # every write of this run checks it still owns the session
            takeovers = over_budget(session_id, owner) if previous else None
            if previous:
                _kill_orphaned_commands(session_id)
            try:
                if takeovers is not None:  # its runs keep taking their worker down: not run again
                    end_crash_looping(session_id, takeovers)
                else:
                    Loop(
                        session_id,
                        abort,
                        active_runs=keeper.active,
                        lost=lost,
                        policy_stamp=lambda: keeper.stamp(session_id),
                    ).run()
            except LeaseLost:
                lost.set()
                abort.set()  # a command still running for this run is killed (the tool's cancel)
                log.warning("lease_lost_write_refused", session=session_id)
            except Exception as exc:
                log.exception("run_failed", session=session_id)
                if not lost.is_set():  # the new owner reports for the session now, not us
                    _crashed(session_id, exc)
    finally:
        keeper.drop(session_id)
        requeue = lease_release(session_id, owner)
        release_connection(keeper.active())
    if requeue:
        enqueue_run(session_id)
    if org_id is not None:
        wake_waiting(org_id, ended=session_id)
    return True


def _kill_orphaned_commands(session_id: str) -> None:
    """The previous runner's lease expired (it died or stalled): a command it started may still run in
    the sandbox, and would race this run's tools. Kill it before resuming."""
    from hangar.engine.workspace.sandboxes import sandbox_for

    try:
        session = session_for_run(session_id)
        if session.parent_id:
            # A task's child shares its root session's sandbox: killing every command there would stop
            # the parent's and the siblings' too. Its orphan ends at its own timeout.
            return
        killed = sandbox_for(session).cancel_execs()
        if killed:
            log.warning("orphaned_commands_killed", session=session_id, count=killed)
    except Exception:
        log.warning("orphaned_commands_kill_failed", session=session_id, exc_info=True)


def _crashed(session_id: str, exc: Exception) -> None:
    """A bug in the loop must not leave the session busy forever: say so and go idle."""
    try:
        session = session_for_run(session_id)
        turn_failed(session, crash_error(exc))  # told as every failed turn is: an error answer, session.error
        with transaction.atomic():
            store.session_status_set(session=session, status="idle")
            wake_parent(session)  # a task's child that crashed: its parent reads the failure
        session_abort_clear(session_id=session_id)
    except Exception:
        log.exception("run_crash_report_failed", session=session_id)
