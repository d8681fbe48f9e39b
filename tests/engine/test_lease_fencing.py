"""One runner per session under stress: the lease keeper has a connection of its own, a run's writes are
fenced by its lease, and a lost run's command in the sandbox is killed."""

import threading
import time

import psycopg
import pytest
from django.db import connection

from hangar.conversations.models import Event, Part, Session
from hangar.conversations.services import session_create
from hangar.engine.run import leases
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def bash(call_id, command):
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


def _running(session) -> bool:
    return any(p["state"]["status"] == "running" for p in tool_parts(session))


def _raw_connection() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    return psycopg.connect(**params, autocommit=False)


def test_the_lease_keeper_renews_while_every_pooled_connection_is_stuck(
    alice, script, make_session, start_worker
):
    """Two runs stuck in a write hold both pooled connections; the keeper must still renew."""
    start_worker(env={"HANGAR_DB_POOL_MAX": "2"})
    sessions = []
    for _ in range(3):
        # Each command ends inside the lock's window below, so each run then blocks writing its result.
        script_id = script.load([[bash("c1", "sleep 6")], [{"text": "done"}]])
        session = make_session(alice, script_id)
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("go"))
        sessions.append(session)
    wait_for(lambda: all(_running(s) for s in sessions), what="the three commands running at once")

    blocker = _raw_connection()
    worst = float("inf")
    try:
        blocker.execute("LOCK TABLE conversations_part IN ACCESS EXCLUSIVE MODE")
        held_until = time.monotonic() + 12  # twice the test lease TTL (6 s)
        while time.monotonic() < held_until:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT min(extract(epoch FROM lease_expires_at - now())) FROM conversations_session"
                    " WHERE id = ANY(%s)",
                    [[s.pk for s in sessions]],
                )
                worst = min(worst, float(cursor.fetchone()[0]))
            time.sleep(0.5)
    finally:
        blocker.rollback()
        blocker.close()
    assert worst > 0, f"a lease expired while the pool was stuck ({worst:.1f} s)"
    for session in sessions:
        wait_idle(session)
        assert text_of(session) == "done"


def test_a_run_whose_lease_was_taken_writes_nothing_more(alice, script, make_session, worker):
    script_id = script.load([[bash("c1", "sleep 30")], [{"text": "never"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long"))
    wait_for(lambda: _running(session), what="bash running")

    # Another runner takes the session (as recover_expired_runs would after a stall).
    Session.objects.filter(pk=session.pk).update(lease_owner="intruder:1:abc")
    seq = Session.objects.get(pk=session.pk).event_seq
    time.sleep(4)  # the keeper notices within ~1 s and the old run stops
    try:
        written = list(Event.objects.filter(session=session, seq__gt=seq).values_list("type", flat=True))
        assert written == [], f"the old runner wrote after losing its lease: {written}"
        part = Part.objects.get(session=session, type="tool").data
        assert part["state"]["status"] == "running"
        # Its command was killed all the same (the abort reaches the sandbox).
        out = sandbox_for(session).exec("pgrep -f 'sleep 3[0]' || echo none").output
        assert out.strip() == "none"
    finally:
        Session.objects.filter(pk=session.pk).update(lease_owner="", lease_expires_at=None, status="idle")


def test_a_killed_workers_command_is_killed_when_another_worker_takes_over(
    alice, script, make_session, start_worker
):
    script_id = script.load([[bash("c1", "sleep 300 && touch /workspace/late")], [{"text": "resumed"}]])
    first = start_worker()
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long command"))
    wait_for(lambda: _running(session), what="bash running")
    first.kill()
    start_worker(beat=True)
    session = wait_idle(session, timeout=90)  # lease TTL + beat period + a worker's start, under load
    assert text_of(session) == "resumed"
    out = sandbox_for(session).exec("pgrep -f 'sleep 30[0]' || echo none").output
    assert out.strip() == "none", "the dead runner's command still runs in the sandbox"


def test_the_keeper_reads_every_second_and_renews_every_third_of_the_ttl(alice):
    """Renewing is a write of every held row: the keeper renews every RENEW_EVERY_S (a third of the TTL)
    and only reads each second, which is enough to relay an abort and a lease taken away within ~1 s."""
    session = session_create(actor=alice.actor, project=alice.project, model={})
    owner = leases.new_owner()
    assert leases.lease_acquire(session.pk, owner) == ""
    keeper, abort = leases._Keeper(), threading.Event()
    lost = keeper.hold(session.pk, owner, abort)
    try:
        expiries = set()
        watch_until = time.monotonic() + leases.RENEW_EVERY_S - 0.5  # the first tick's renewal, no second
        while time.monotonic() < watch_until:
            expiries.add(Session.objects.get(pk=session.pk).lease_expires_at)
            time.sleep(0.2)
        assert len(expiries) == 2, f"renewed {len(expiries) - 1} times in {leases.RENEW_EVERY_S - 0.5} s"
        assert keeper.stamp(session.pk) is not None  # the policy stamp, read on every tick

        Session.objects.filter(pk=session.pk).update(abort_requested=True)
        assert abort.wait(2.5) and not lost.is_set()
        Session.objects.filter(pk=session.pk).update(lease_owner="intruder:1:abc")
        assert lost.wait(2.5)
    finally:
        keeper.drop(session.pk)
