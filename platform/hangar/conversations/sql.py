"""The store's fixed hot statements (every agent step runs a handful): prepared, with server-side binding.

Django's psycopg backend binds parameters on the client (it quotes every value into the SQL text in
Python: a regex pass over each JSON payload, milliseconds per step for tool output) and never prepares
statements, so Postgres parses and plans the same few statements again on every step. These statements
never change shape, so they are sent as psycopg `Cursor`s (values travel apart from the SQL) with
`prepare=True`: parsed and planned once per pooled connection. Measured with bench/step_cpu.py.

Run on Django's own connection (same transaction, same atomic blocks), with Django's error translation
(IntegrityError etc.), and logged in `connection.queries` when Django logs queries, so the tests that pin
one statement per step boundary still see them. Rows come back as psycopg loads them with Django's
adapters: jsonb as text (`json.loads` it), timestamps as aware datetimes.
"""

from __future__ import annotations

import time

import psycopg
from django.db import connection


def run(sql: str, params: list | tuple) -> list[tuple]:
    """Execute one statement; its rows (empty if it returns none)."""
    connection.ensure_connection()
    started = time.monotonic()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        rows = cursor.fetchall() if cursor.description is not None else []
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows
