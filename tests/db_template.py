"""The test databases are copies of one migrated template (Postgres' CREATE DATABASE ... TEMPLATE).

Each test process (pytest-xdist) used to build its database by running every migration: on two cores,
four processes doing so at once held the start of a run for about 20 s. The template is migrated once per
set of migrations, named by their hash (hangar_test_tmpl_<hash>), and kept between runs like any cache: a
run whose migrations changed builds a new one (under a lock, one process builds it while the others wait)
and drops the stale ones no one is copying. Django then copies it for each process (settings' TEST
TEMPLATE) and its migrate finds everything applied. Copying never changes the template."""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
import sys
from pathlib import Path

import django
import psycopg
from django.conf import settings

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "hangar_test_tmpl_"


def _migrations_hash() -> str:
    digest = hashlib.sha256(django.get_version().encode())
    for path in sorted((ROOT / "platform").glob("hangar/**/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _conninfo(db: dict, name: str) -> dict:
    return {
        "dbname": name,
        "user": db.get("USER") or None,
        "password": db.get("PASSWORD") or None,
        "host": db.get("HOST") or None,
        "port": str(db.get("PORT")) if db.get("PORT") else None,
    }


def _url(db: dict, name: str) -> str:
    auth = db.get("USER") or ""
    if auth and db.get("PASSWORD"):
        auth += f":{db['PASSWORD']}"
    host = db.get("HOST") or ""
    if host.startswith("/"):  # a socket directory
        return f"postgres://{auth}@/{name}?host={host}"
    port = f":{db['PORT']}" if db.get("PORT") else ""
    return f"postgres://{auth + '@' if auth else ''}{host}{port}/{name}"


def ensure() -> str:
    """The name of the migrated template for this tree's migrations, built if it is missing."""
    db = settings.DATABASES["default"]
    name = PREFIX + _migrations_hash()
    with open(f"/tmp/{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with psycopg.connect(**_conninfo(db, "postgres"), autocommit=True) as admin:
            rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE %s", [PREFIX + "%"])
            existing = {row[0] for row in rows.fetchall()}
            if name not in existing:
                _build(admin, db, name)
            for stale in existing - {name}:
                if not stale.endswith("_building"):
                    _drop_quietly(admin, stale)
    return name


def _build(admin: psycopg.Connection, db: dict, name: str) -> None:
    building = f"{name}_building"
    admin.execute(f'DROP DATABASE IF EXISTS "{building}"')
    admin.execute(f'CREATE DATABASE "{building}"')
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env={**_environ(), "DATABASE_URL": _url(db, building)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        _drop_quietly(admin, building)
        raise RuntimeError(f"migrating the test template failed:\n{done.stdout}\n{done.stderr}")
    # Published under its final name only once complete: a run killed midway leaves `_building`.
    admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{name}"')


def _drop_quietly(admin: psycopg.Connection, name: str) -> None:
    """Drop `name` unless another run is copying it right now (then the next run drops it)."""
    try:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
    except psycopg.Error:
        pass


def _environ() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if key != "PYTEST_XDIST_WORKER"}
