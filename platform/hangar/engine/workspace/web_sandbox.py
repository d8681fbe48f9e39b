"""Sandbox work a web request does itself — a person's file reads, path and text searches of the session's
workspace, and its archive — made harmless to the web tier rather than moved to a worker.

Why here and not in a worker: each of these is a round trip of about a millisecond to an agent already
running in the sandbox (or Docker's own archive stream); a Celery hop would add the queue's latency to
every keystroke of `@` search and every file opened. What made them dangerous in the web process was the
rest, and that is gone:
  * never a sandbox started here: only a running one is read. A member's read of a session whose sandbox
    is not running asks a worker to start it (the repository queue's `prepare_workspace`: resume, clone,
    setup script) and answers 409 meanwhile; a viewer's asks nothing;
  * bounded per process (HANGAR_WEB_SANDBOX_CONCURRENCY) and per org across every web process
    (HANGAR_WEB_SANDBOX_PER_ORG, a Redis sorted set of slots that expire at their deadline, so a process
    that dies cannot leak one): beyond either, 429 at once, never a queue of threads;
  * a total deadline per request (HANGAR_WEB_SANDBOX_DEADLINE_S): each call is given what is left;
  * no database connection held across the sandbox work: the request's connection goes back first (the
    pool's, or closed) and is taken again only if the request reads more afterwards.
An archive streams for longer than a read: its slot is held until the stream ends or is dropped, and its
own per-process bound (HANGAR_WORKSPACE_ARCHIVE_CONCURRENCY, hangar.engine.repo_ops) still applies.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from django.conf import settings
from django.db import connection

from hangar.logging import get_logger
from sandbox.protocol import Sandbox

log = get_logger(__name__)


class WebSandboxBusy(Exception):
    """Too much sandbox work at once in this process or for this org: 429."""


class SandboxNotRunning(Exception):
    """The session's sandbox is not running; `starting`: a worker was asked to start it."""

    def __init__(self, message: str, starting: bool):
        super().__init__(message)
        self.starting = starting


def process_limit() -> int:
    return int(getattr(settings, "HANGAR_WEB_SANDBOX_CONCURRENCY", 8))


def org_limit() -> int:
    return int(getattr(settings, "HANGAR_WEB_SANDBOX_PER_ORG", 4))


def deadline_s() -> float:
    return float(getattr(settings, "HANGAR_WEB_SANDBOX_DEADLINE_S", 30))


_lock = threading.Lock()
_running = 0

# Take a slot of the org's set if it holds fewer than the limit once expired slots are dropped: one atomic
# round trip. KEYS[1] the org's set; ARGV: now, limit, this slot's expiry, its id, the key's lifetime.
_TAKE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
"""
_client: redis.Redis | None = None
_PREFIX = settings.HANGAR_CHANNEL_PREFIX  # one Redis, several deployments (and test runs)


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=5, max_connections=200)
    return _client


def _org_key(org_id: int) -> str:
    return f"{_PREFIX}:web-sandbox:{org_id}"


def _take_process() -> None:
    global _running
    limit = process_limit()
    with _lock:
        if _running >= limit:
            raise WebSandboxBusy(f"At most {limit} workspace reads run at once here: try again in a moment.")
        _running += 1


def _give_process() -> None:
    global _running
    with _lock:
        _running -= 1


def _take_org(org_id: int, hold_s: float) -> str:
    slot, now = uuid.uuid4().hex, time.time()
    taken = _redis().eval(_TAKE, 1, _org_key(org_id), now, org_limit(), now + hold_s, slot, int(hold_s) + 60)
    if not taken:
        raise WebSandboxBusy(
            f"Your organisation already has {org_limit()} workspace reads or downloads running: try again "
            "in a moment."
        )
    return slot


def _give_org(org_id: int, slot: str) -> None:
    try:
        _redis().zrem(_org_key(org_id), slot)
    except redis.RedisError:  # the slot expires at its deadline anyway
        log.warning("web_sandbox_slot_release_failed", org=org_id, exc_info=True)


class Slot:
    """A request's place among the web tier's sandbox work: `left()` is what remains of its deadline."""

    def __init__(self, org_id: int, hold_s: float):
        self.org_id, self.deadline = org_id, time.monotonic() + hold_s
        _take_process()
        try:
            self.slot = _take_org(org_id, hold_s)
        except BaseException:
            _give_process()
            raise
        self.held = True
        give_back_connection()

    def left(self, most: float | None = None) -> float:
        """Seconds left before the deadline (at most `most`); raises TimeoutError when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("The workspace read took too long.")
        return min(left, most) if most is not None else left

    def release(self) -> None:
        if self.held:
            self.held = False
            _give_org(self.org_id, self.slot)
            _give_process()


@contextmanager
def web_slot(org_id: int, hold_s: float | None = None) -> Iterator[Slot]:
    """Hold a place for one request's sandbox work (WebSandboxBusy beyond the bounds), with the request's
    database connection given back first."""
    slot = Slot(org_id, hold_s or deadline_s())
    try:
        yield slot
    finally:
        slot.release()


def give_back_connection() -> None:
    """The request's database connection goes back before sandbox work (the pool's, or closed); Django
    takes one again if the request reads more. Not inside a transaction, which must keep its own."""
    if not connection.in_atomic_block:
        connection.close()


def running_box(session_id: str, *, may_start: bool) -> Sandbox:
    """The session's sandbox if it runs. Else SandboxNotRunning; when `may_start` (someone who may drive
    the session), a worker is first asked to start it (and prepare its workspace)."""
    from hangar.engine.session.enqueue import enqueue_prepare
    from hangar.engine.workspace.sandboxes import manager

    if settings.HANGAR_SANDBOX_REMOTE:  # no Docker here: the session's host says where it runs, if it does
        from hangar.engine.workspace.remote import running_remote

        located = running_remote(session_id, timeout=min(deadline_s(), 10.0))
        if located is not None:
            return located
    else:
        boxes = manager()
        if boxes.is_running(session_id):
            return boxes.connect(session_id)
    if may_start:
        enqueue_prepare(session_id)
        raise SandboxNotRunning("The session's sandbox is starting: try again in a moment.", starting=True)
    raise SandboxNotRunning(
        "The session's sandbox is not running: it starts with the session's next prompt.", starting=False
    )
