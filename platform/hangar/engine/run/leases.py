"""One runner per session across all workers: a lease on the Session row.

Acquire is one conditional UPDATE (free or expired → mine); a single keeper thread per worker process
reads every lease the process holds once a second (one SELECT: is it still mine, `abort_requested`, the
policy stamp), so an abort reaches the running step within ~1 s without one DB connection per session,
and renews them all in one UPDATE every third of LEASE_TTL. Renewing is a write of every held row (a new
row version, its WAL and its vacuum), reading is not: with sessions waiting on their models, renewing
every second was Postgres's largest statement (bench/density.py with pg_stat_statements). A worker killed with SIGKILL stops renewing; after LEASE_TTL the lease is expired and
`recover_expired_runs` hands the session to another worker.

The keeper talks to Postgres over a connection of its own, outside Django's pool: when every pooled
connection is held by runs stuck in a write, a keeper waiting its turn for the pool let the leases expire
and another worker start a second runner (tests/engine/test_lease_fencing.py). Its statements time out
so a stalled database cannot freeze it either. A run's own writes are fenced by its owner string
(hangar.conversations.fence), so a run that has lost the lease cannot write even before the keeper tells it.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from datetime import datetime
from typing import Any

import psycopg
from django.conf import settings
from django.db import connections

from hangar.conversations.loop_services import (
    session_lease_acquire,
    session_lease_release,
    session_leases_renew,
)
from hangar.conversations.slot_selectors import leases_poll
from hangar.logging import get_logger

log = get_logger(__name__)

LEASE_TTL_S = settings.HANGAR_LEASE_TTL_S
KEEPER_INTERVAL_S = 1.0
RENEW_EVERY_S = max(KEEPER_INTERVAL_S, LEASE_TTL_S / 3)  # two renewals may fail before a lease expires
KEEPER_STATEMENT_TIMEOUT_MS = 3000


def new_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def lease_acquire(session_id: str, owner: str) -> str | None:
    """None if another runner holds the lease; else the previous owner ('' if it was free)."""
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
        self._conn: psycopg.Connection | None = None
        self._stamps: dict[str, Any] = {}
        self._renewed_at = 0.0  # time.monotonic() of the last renewal

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

    def _connect(self) -> psycopg.Connection:
        """The keeper's own connection (Django's settings, never the pool), opened on demand."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            params = connections["default"].get_connection_params()
            params.pop("pool", None)
            params["options"] = (
                f"{params.get('options', '')} -c statement_timeout={KEEPER_STATEMENT_TIMEOUT_MS}"
            )
            params.update(autocommit=True, connect_timeout=3, prepare_threshold=None)
            self._conn = psycopg.connect(**params)
        return self._conn

    def _disconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _run(self) -> None:
        stop = threading.Event()
        while not stop.wait(KEEPER_INTERVAL_S):
            with self._lock:
                held = dict(self._held)
            if not held:
                self._disconnect()  # an idle worker holds no connection for its keeper
                continue
            try:
                self._tick(held)
            except Exception:
                log.warning("lease_renew_failed", exc_info=True)
                self._disconnect()  # reconnect on the next tick (e.g. after a Postgres restart)

    def stamp(self, session_id: str) -> datetime | None:
        """The session's policy stamp as the keeper last read it (None: not read yet)."""
        return self._stamps.get(session_id)

    def _tick(self, held: dict[str, Any]) -> None:
        conn = self._connect()
        owners = {i: held[i][0] for i in held}
        if time.monotonic() - self._renewed_at >= RENEW_EVERY_S:
            # A lease acquired since the last renewal has its full TTL already: renewing it early is safe.
            session_leases_renew(owners=owners, ttl_s=LEASE_TTL_S, using=conn)
            self._renewed_at = time.monotonic()
        polled = leases_poll(owners, using=conn)  # a lease taken away is missing from it
        # Policy changes reach a run between two tool calls of one step (hangar.engine.turn.live_policy).
        self._stamps = {i: stamp for i, (_abort, stamp) in polled.items()}  # replaced whole: one tick's map
        for session_id, (_owner, abort, lost) in held.items():
            if session_id not in polled:
                lost.set()
                abort.set()
            elif polled[session_id][0]:
                abort.set()


keeper = _Keeper()
