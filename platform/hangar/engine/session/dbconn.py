"""Giving the thread's DB connection back while a step waits (on the model, on a tool).

With Django's psycopg pool (HANGAR_DB_POOL_MAX) closing returns the connection to the pool, so it is
always done; without a pool it is done only when the process carries many sessions, since reconnecting
costs a few milliseconds."""

from django.conf import settings
from django.db import connection

KEEP_CONNECTION_UP_TO = 20


def pooled() -> bool:
    return "pool" in (settings.DATABASES["default"].get("OPTIONS") or {})


def release_connection(active_runs: int = 1) -> None:
    if connection.in_atomic_block:
        return
    if pooled() or active_runs > KEEP_CONNECTION_UP_TO:
        connection.close()
