"""SIGKILL of the worker process that runs a session, mid-step (in a command, in the model's stream):
another worker takes the session over once the lease expires, and the session finishes with a sound
event log."""

import pytest

from hangar.conversations.models import Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import assistant_messages, text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.faults.checks import (
    assert_nothing_busy,
    assert_sound_log,
    assert_stream_resumes,
    bash,
    seq_now,
    wait_workers_ready,
)

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def two_workers(start_worker) -> list:
    """Two workers started side by side, each with a beat (recover_expired_runs every 5 s; run twice, it is
    harmless: a recovered run must take the lease): whichever gets the session, the other recovers it."""
    workers = [start_worker(beat=True), start_worker(beat=True)]
    wait_workers_ready(2)
    return workers


def runner(workers: list, session: Session):
    """The worker process holding the session's lease (owner strings carry the pid)."""
    owner = wait_for(lambda: Session.objects.get(pk=session.pk).lease_owner, what="a runner")
    [holder] = [w for w in workers if f":{w.proc.pid}:" in owner]
    return holder


def test_a_worker_sigkilled_mid_step_hands_the_session_over_with_a_sound_log(
    alice, script, make_session, start_worker
):
    script_id = script.load(
        [[{"text": "Running it."}, bash("c1", "sleep 120")], [{"text": "resumed and finished"}]]
    )
    workers = two_workers(start_worker)
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long command"))
    first = runner(workers, session)
    wait_for(lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running")

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


def test_a_worker_sigkilled_mid_model_stream_leaves_no_open_message(
    alice, script, make_session, start_worker
):
    script_id = script.load(
        [[{"text": "half an answer"}, {"hang": 120}], [{"text": "answered after the takeover"}]]
    )
    workers = two_workers(start_worker)
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("explain"))
    first = runner(workers, session)
    wait_for(lambda: [r for r in script.requests(script_id) if r.get("stream")], what="the model streaming")

    killed_at = seq_now(session)
    first.kill()
    session = wait_idle(session, timeout=45)

    # The interrupted message is closed (not left open for ever); its streamed text was only deltas, never
    # stored, so the answer is the new runner's alone.
    interrupted, answer = assistant_messages(session)
    assert interrupted["time"].get("completed") and answer["finish"] == "stop"
    assert text_of(session) == "answered after the takeover"
    assert session.messages.filter(role="user").count() == 1
    assert_sound_log(session)
    assert_stream_resumes(alice, session, after=killed_at)
    assert_nothing_busy()
