"""Low: the psycopg pool (HANGAR_DB_POOL_MAX, as the web and the worker run) checks a connection before
handing it out. Without the check, a Postgres restart leaves the pool full of connections whose server end
is gone, and each is handed to a request that then fails. The pool's connections are killed from another
session (as a restart does), then the process queries through Django as a request would."""

import json
import os
import subprocess
import sys

import pytest

from tests.engine.conftest import ROOT

PROBE = """
import json, time
import django
django.setup()
import psycopg
from django.db import connection

pool = connection.pool
pool.open(wait=True)
held = [pool.getconn() for _ in range(2)]
pids = [c.info.backend_pid for c in held]
for c in held:
    pool.putconn(c)
params = connection.get_connection_params()
params.pop("prepare_threshold", None)
params.pop("options", None)
with psycopg.connect(**params, autocommit=True) as killer:
    killer.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
    # Until the killed backends have exited (their server ends closed), not a guessed pause.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and killer.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [pids]
    ).fetchone()[0]:
        time.sleep(0.02)
outcomes = []
for _ in range(3):
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            outcomes.append(["ok", cursor.fetchone()[0] not in pids])
    except Exception as exc:
        outcomes.append(["error", type(exc).__name__])
    connection.close()
print(json.dumps(outcomes))
"""


@pytest.mark.django_db
def test_a_pooled_connection_killed_by_a_postgres_restart_is_never_handed_out(django_db_setup):
    from django.conf import settings

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hangar.settings",
        "PYTHONPATH": "platform:.",
        "HANGAR_DB_POOL_MAX": "2",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{settings.DATABASES['default']['NAME']}",
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    outcomes = json.loads(out.stdout.strip().splitlines()[-1])
    assert outcomes == [["ok", True]] * 3, outcomes
