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

from hangar.engine.dbconn import pooled
from hangar.logging import get_logger

log = get_logger(__name__)

LEASE_TTL_S = int(os.environ.get("HANGAR_LEASE_TTL_S", "15"))
KEEPER_INTERVAL_S = 1.0


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(session_id: str, owner: str) -> bool:
    """Take the lease if free or expired; clears run_requested (this runner will see the new work)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET lease_owner = %s, run_requested = false,"
            " lease_expires_at = now() + make_interval(secs => %s)"
            " WHERE id = %s AND (lease_owner = '' OR lease_expires_at IS NULL OR lease_expires_at < now())"
            " RETURNING id",
            [owner, LEASE_TTL_S, session_id],
        )
        return cursor.fetchone() is not None


def lease_release(session_id: str, owner: str) -> bool:
    """Give the lease back; returns True if work was requested meanwhile (the caller re-enqueues)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE conversations_session SET lease_owner = '', lease_expires_at = NULL"
            " WHERE id = %s AND lease_owner = %s RETURNING run_requested",
            [session_id, owner],
        )
        row = cursor.fetchone()
    return bool(row and row[0])


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
        ids = list(held)
        owners = [held[i][0] for i in ids]
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE conversations_session AS s SET lease_expires_at = now() + make_interval(secs => %s)"
                " FROM unnest(%s::text[], %s::text[]) AS h(id, owner)"
                " WHERE s.id = h.id AND s.lease_owner = h.owner RETURNING s.id, s.abort_requested",
                [LEASE_TTL_S, ids, owners],
            )
            renewed = {row[0]: row[1] for row in cursor.fetchall()}
        for session_id, (_owner, abort, lost) in held.items():
            if session_id not in renewed:
                lost.set()
                abort.set()
            elif renewed[session_id]:
                abort.set()


keeper = _Keeper()
