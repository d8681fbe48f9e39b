"""Hot fixed statements (every agent step and every token request runs some): prepared, server-side
binding, and rows turned into model instances without building an ORM query.

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
from functools import cache
from typing import Any

import psycopg
from django.db import connection, models


def run(sql: str, params: list | tuple | dict) -> list[tuple]:
    """Execute one statement; its rows (empty if it returns none)."""
    connection.ensure_connection()
    started = time.monotonic()
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, prepare=True)
        rows = cursor.fetchall() if cursor.description is not None else []
    if connection.queries_logged:
        connection.queries_log.append({"sql": sql, "time": f"{time.monotonic() - started:.3f}"})
    return rows


# --- rows of joined tables as model instances (what select_related gives) -------------------------


@cache
def _fields(model: type[models.Model]) -> tuple[str, ...]:
    return tuple(field.attname for field in model._meta.concrete_fields)


@cache
def select_list(model: type[models.Model], alias: str) -> str:
    """The model's columns as `alias."column", ...`, in the order `instances` reads them."""
    return ", ".join(f'{alias}."{field.column}"' for field in model._meta.concrete_fields)


@cache
def _converters(model: type[models.Model]) -> tuple:
    """(index, column, converters) for the fields whose database value needs converting (a JSONField's
    text, for one), as the ORM's compiler applies them."""
    out = []
    for index, field in enumerate(model._meta.concrete_fields):
        column = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
        if converters:
            out.append((index, column, tuple(converters)))
    return tuple(out)


def instances(tables, row) -> list[Any]:
    """One instance per (model, alias) of `tables` from the row's consecutive columns (selected with
    `select_list`); None for a LEFT JOIN that missed. Typed Any: each position is an instance of the model
    the caller put there, or None."""
    out: list[Any] = []
    start = 0
    for model, _ in tables:
        names = _fields(model)
        values = list(row[start : start + len(names)])
        start += len(names)
        if values[names.index(model._meta.pk.attname)] is None:
            out.append(None)
            continue
        for index, column, converters in _converters(model):
            for convert in converters:
                values[index] = convert(values[index], column, connection)
        out.append(model.from_db(connection.alias, names, values))
    return out
