"""SIGKILL of the worker process that runs a session, mid-step: another worker takes the session over
once the lease expires, and the session finishes with a sound event log."""

import pytest

from hangar.conversations.models import Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.faults.checks import (
    assert_nothing_busy,
    assert_sound_log,
    assert_stream_resumes,
    bash,
    seq_now,
    wait_workers_ready,
)

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def test_a_worker_sigkilled_mid_step_hands_the_session_over_with_a_sound_log(
    alice, script, make_session, start_worker
):
    script_id = script.load(
        [[{"text": "Running it."}, bash("c1", "sleep 120")], [{"text": "resumed and finished"}]]
    )
    first = start_worker()
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long command"))
    owner = wait_for(lambda: Session.objects.get(pk=session.pk).lease_owner, what="a runner")
    assert f":{first.proc.pid}:" in owner
    start_worker(beat=True)  # starts while the command runs; its beat recovers expired leases every 5 s
    wait_for(lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running")
    wait_workers_ready(2)
    assert tool_parts(session)[0]["state"]["status"] == "running"  # the kill lands mid-command

    killed_at = seq_now(session)
    first.kill()  # SIGKILL mid-step: no cleanup, the lease just stops being renewed
    session = wait_idle(session, timeout=45)

    assert text_of(session) == "Running it.resumed and finished"
    part = tool_parts(session)[0]
    assert part["state"]["status"] == "error" and part["state"]["error"] == "Tool execution aborted"
    assert session.messages.filter(role="user").count() == 1
    assert_sound_log(session)
    assert_stream_resumes(alice, session, after=killed_at)
    assert_nothing_busy()
