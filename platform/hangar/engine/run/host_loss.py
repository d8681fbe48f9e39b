"""A lost sandbox host ends the turns that worked on it (docs/scale-out.md, "Host loss").

Beat's sweep (`sweep`, every few seconds) marks every host whose heartbeat is older than
HANGAR_HOST_LOST_AFTER_S `lost` (audited), then ends the turn of each busy session whose sandbox is on a
lost host, and of the busy tasks under it: it takes the session's lease whoever holds it (a runner still
alive there loses it: its keeper's next renewal misses, its writes are fenced), closes the open step as
the crash budget does, answers with the error "sandbox host lost" (the `session.error` event and the
message a reload shows, like any failed turn: hangar.engine.run.failures), sets the session idle, audits
the turn (`host_lost`) and gives the lease back. Never stuck busy: the next prompt runs it again: with a
worker without Docker on another host, from its last checkpoint (hangar.engine.workspace.host_resume);
with a worker with Docker on the same host once it heart-beats again (its workspace is there).
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings
from django.db import transaction

from hangar.conversations import services as store
from hangar.conversations.errors import opencode_error
from hangar.conversations.fence import fenced
from hangar.conversations.host_selectors import busy_sessions_on_lost_hosts
from hangar.conversations.host_services import hosts_mark_lost
from hangar.conversations.loop_selectors import session_for_run
from hangar.conversations.loop_services import session_lease_take
from hangar.conversations.run_audit_services import session_turn_audit
from hangar.engine.run.abort import finish_aborted_turn
from hangar.engine.run.failures import turn_failed
from hangar.engine.run.leases import LEASE_TTL_S, lease_release, new_owner
from hangar.engine.session.subtasks import wake_parent
from hangar.logging import get_logger

log = get_logger(__name__)

HOST_LOST = "sandbox host lost"


def host_lost_error(host: str | None) -> dict[str, Any]:
    where = f" ({host})" if host else ""
    return {
        "name": "SandboxHostLostError",
        "data": {
            "message": f"{HOST_LOST}: the machine holding this session's sandbox{where} stopped answering,"
            " so this turn was ended. Send a new message to continue when it is back.",
        },
    }


def sweep() -> dict[str, Any]:
    lost = hosts_mark_lost(silent_for_s=float(settings.HANGAR_HOST_LOST_AFTER_S))
    for name in lost:
        log.error("sandbox_host_lost", host=name)
    ended = [session_id for session_id in busy_sessions_on_lost_hosts() if end_turn(session_id)]
    return {"lost": lost, "ended": ended}


def end_turn(session_id: str) -> bool:
    """End the busy session's turn for its lost host; False if it was no longer busy."""
    owner = f"host-loss:{new_owner()}"
    if not session_lease_take(session_id=session_id, owner=owner, ttl_s=LEASE_TTL_S):
        return False
    try:
        with fenced(session_id, owner):
            session = session_for_run(session_id)
            root = session if not session.parent_id else None
            error = host_lost_error(root.sandbox_host_id if root else None)
            log.error("turn_ended_host_lost", session=session_id, host=session.sandbox_host_id)
            aborted = threading.Event()
            aborted.set()  # the open step's calls only record their end: no sandbox is reached
            finish_aborted_turn(session, aborted, error=opencode_error(error))
            turn_failed(session, error)  # session.error (and an answer if the prompt had none)
            with transaction.atomic():
                store.session_status_set(session=session, status="idle")
                wake_parent(session)  # a task's child: its parent reads the failure
            session_turn_audit(session=session, outcome="host_lost", steps=0)
    finally:
        lease_release(session_id, owner)
    return True
