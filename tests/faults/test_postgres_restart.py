"""A restart of Postgres while a session runs: the worker's connections (its pool, the lease keeper's)
break; the session still finishes (resumed if its run had to give up), and the log stays sound. The
cluster is a private one (tests/private_services.py) holding a copy of the test database; the machine's
shared Postgres is never touched."""

import subprocess

import psycopg
import pytest
from django.db import connections

from hangar.conversations.models import Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for
from tests.faults.checks import (
    LiveClient,
    assert_live_client_got_everything,
    assert_nothing_busy,
    assert_sound_log,
    assert_stream_resumes,
    bash,
    seq_now,
    through_outage,
)
from tests.private_services import PrivatePostgres

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_postgres(alice):
    """A private cluster holding a copy of the test database as it is now (personas included); this
    process's connections point at it until the test ends."""
    server = PrivatePostgres().start()
    db = connections["default"].settings_dict
    assert connections.settings["default"] is db  # every thread's connection is built from this dict
    copy = f"{db['NAME']}_copy"
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{copy}"')
    dump = subprocess.run(
        [
            f"{server.bin}/pg_dump",
            "-h",
            db["HOST"] or "127.0.0.1",
            "-p",
            str(db["PORT"] or 5432),
            "-U",
            db["USER"] or "postgres",
            db["NAME"],
        ],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(
        [f"{server.bin}/psql", "-q", "-v", "ON_ERROR_STOP=1", server.url(copy)],
        input=dump,
        check=True,
        capture_output=True,
    )
    saved = {key: db[key] for key in ("HOST", "PORT", "NAME")}
    connections.close_all()
    db.update(HOST="127.0.0.1", PORT=str(server.port), NAME=copy)
    yield server, server.url(copy)
    connections.close_all()
    db.update(saved)
    server.destroy()


@pytest.mark.parametrize("pool", ["5", ""], ids=["pooled", "persistent"])
def test_a_postgres_restart_mid_run_loses_no_event_and_nothing_stays_busy(
    alice, script, make_session, private_postgres, start_worker, pool
):
    """private_postgres before start_worker: the worker is stopped before its database is."""
    server, url = private_postgres
    # Pooled: as deploy/run-worker.sh runs it (a psycopg pool per process); persistent: a connection per
    # thread (CONN_MAX_AGE), the settings' default.
    start_worker(beat=True, env={"DATABASE_URL": url, "HANGAR_DB_POOL_MAX": pool})
    script_id = script.load([[{"text": "Running it."}, bash("c1", "sleep 2")], [{"text": "and done"}]])
    session = make_session(alice, script_id)
    client = LiveClient(alice, session)
    try:
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("run something"))
        wait_for(
            lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running"
        )
        restarted_at = seq_now(session)
        # Immediate stop (every connection cut, as in a crash), down for longer than the command: the step's
        # closing writes meet no database.
        server.restart(down_s=4)
        session = through_outage(lambda: _idle(session), timeout=45)

        assert text_of(session) == "Running it.and done"
        state = tool_parts(session)[0]["state"]
        # Either the step's writes waited out the outage (a pool that checks its connections) and the
        # command's result is kept, or the run failed on a cut connection and was resumed, the call
        # reported as aborted; never left running.
        assert state["status"] in ("completed", "error"), state
        assert session.messages.filter(role="user").count() == 1
        assert_sound_log(session)
        assert_live_client_got_everything(client, session)
    finally:
        client.stop()
    assert_stream_resumes(alice, session, after=restarted_at)
    assert_nothing_busy()


def _idle(session: Session) -> Session | None:
    s = Session.objects.get(pk=session.pk)
    return s if s.status == "idle" and not s.lease_owner and not s.run_requested else None
