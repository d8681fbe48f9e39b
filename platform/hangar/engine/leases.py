"""One runner per session across all workers: a lease on the Session row.

Acquire is one conditional UPDATE (free or expired → mine); a single keeper thread per worker process
renews every lease the process holds in one UPDATE every second and, in the same statement, reads
`abort_requested`, so an abort reaches the running step within ~1 s without one DB connection per
session. A worker killed with SIGKILL stops renewing; after LEASE_TTL the lease is expired and
`recover_expired_runs` hands the session to another worker.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid

from django.db import close_old_connections, connection

from hangar.conversations.loop_services import (
    session_lease_acquire,
    session_lease_release,
    session_leases_renew,
)
from hangar.engine.dbconn import pooled
from hangar.logging import get_logger

log = get_logger(__name__)

LEASE_TTL_S = int(os.environ.get("HANGAR_LEASE_TTL_S", "15"))
KEEPER_INTERVAL_S = 1.0


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(session_id: str, owner: str) -> bool:
    return session_lease_acquire(session_id=session_id, owner=owner, ttl_s=LEASE_TTL_S)


def lease_release(session_id: str, owner: str) -> bool:
    """True if work was requested meanwhile (the caller re-enqueues)."""
    return session_lease_release(session_id=session_id, owner=owner)


class _Keeper:
    """Renews this process's leases and relays abort requests. Started on first use."""

    def __init__(self) -> None:
        self._held: dict[str, tuple[str, threading.Event, threading.Event]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, session_id: str, owner: str, abort: threading.Event) -> threading.Event:
        """Returns a `lost` event, set if the lease was taken away (the runner must stop)."""
        lost = threading.Event()
        with self._lock:
            self._held[session_id] = (owner, abort, lost)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lease-keeper", daemon=True)
                self._thread.start()
        return lost

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._held.pop(session_id, None)

    def active(self) -> int:
        with self._lock:
            return len(self._held)

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(KEEPER_INTERVAL_S):
            with self._lock:
                held = dict(self._held)
            if not held:
                connection.close()  # an idle worker holds no connection for its keeper (no-op if none)
                continue
            try:
                close_old_connections()
                self._renew(held)
                if pooled():
                    connection.close()
            except Exception:
                log.warning("lease_renew_failed", exc_info=True)

    def _renew(self, held: dict) -> None:
        renewed = session_leases_renew(owners={i: held[i][0] for i in held}, ttl_s=LEASE_TTL_S)
        for session_id, (_owner, abort, lost) in held.items():
            if session_id not in renewed:
                lost.set()
                abort.set()
            elif renewed[session_id]:
                abort.set()


keeper = _Keeper()
