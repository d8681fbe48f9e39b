"""Which files a session's agent has read: write and edit refuse to change an existing file the model has
not read (OpenCode's FileTime). Kept in Redis, so whichever worker resumes the session sees them.

One client per process, shared by every thread. Django's cache would give each thread its own client,
and Celery's Django fix-up closes them after every task, so each run would pay for a new connection (redis-py
looks up its own version through importlib.metadata for every connection it makes)."""

from __future__ import annotations

import hashlib
import threading

import redis
from django.conf import settings

TTL_S = 7 * 86400
_client: redis.Redis | None = None
_lock = threading.Lock()


def _redis() -> redis.Redis:
    global _client
    if _client is None:
        with _lock:
            if _client is None:
                _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=10, max_connections=1000)
    return _client


def _key(session_id: str, path: str) -> str:
    return f"hangar:engine:read:{session_id}:{hashlib.sha1(path.encode()).hexdigest()}"


def was_read(session_id: str, path: str) -> bool:
    return bool(_redis().exists(_key(session_id, path)))


def mark_read(session_id: str, path: str) -> None:
    _redis().set(_key(session_id, path), 1, ex=TTL_S)
