"""A run that takes its worker down (the kernel's OOM killer, a segfault in a parser) must not be re-run for
ever: each recovery would take the next worker down with it, and every other tenant's runs on it. Here the
test plays the part of what kills the worker: whenever the poisoned session's run reaches its model call,
the real worker process holding its lease is SIGKILLed and a fresh one started, as a supervisor would.
After the crash budget the session is ended with an error that says why, and another org's run on the
restarted workers completes."""

import pytest

from hangar.conversations.loop_selectors import sessions_to_recover
from hangar.conversations.models import Event, Session
from hangar.engine.services import session_prompt
from tests.engine.conftest import text_of, text_prompt, wait_for, wait_idle
from tests.faults.checks import assert_nothing_busy, assert_sound_log, wait_workers_ready

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]

BUDGET = 2
ENV = {"HANGAR_RUN_CRASH_BUDGET": str(BUDGET)}


def model_calls(script, script_id: str) -> int:
    return len([r for r in script.requests(script_id) if r.get("stream") and r.get("tools")])


def test_a_session_whose_run_kills_its_worker_is_ended_after_the_budget_and_others_still_run(
    alice, charlie, script, make_session, start_worker
):
    poison = script.load([[{"text": "working"}, {"hang": 600}]] * (BUDGET + 3))
    # One beat at a time, as in production: two would both recover the killed run, and the second request
    # would find the session already ended and run it once more for nothing (busy, then idle again).
    workers = [start_worker(beat=True, env=ENV), start_worker(env=ENV)]
    beats = {workers[0]}
    wait_workers_ready(2)
    session = make_session(alice, poison)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("parse the poisoned file"))

    kills = 0

    def ended_or_killed() -> bool:
        """Kill the worker whose run of the session reached its model call; True once the session ended."""
        nonlocal kills
        row = Session.objects.get(pk=session.pk)
        if row.status == "idle" and not row.lease_owner and not row.run_requested:
            return True
        if model_calls(script, poison) > kills and row.lease_owner:
            [holder] = [w for w in workers if f":{w.proc.pid}:" in row.lease_owner]
            holder.kill()
            kills += 1
            assert kills <= BUDGET, f"the session was run again after killing {BUDGET} workers"
            workers.remove(holder)
            workers.append(start_worker(beat=holder in beats, env=ENV))
            if holder in beats:
                beats.add(workers[-1])
        return False

    wait_for(ended_or_killed, timeout=240, every=0.2, what="the crash-looping session ended")
    assert kills == BUDGET

    errors = [e.payload for e in Event.objects.filter(session=session, type="session.error")]
    assert errors, "the session ended without saying why"
    message = errors[-1]["error"]["data"]["message"]
    assert f"stopped its worker {BUDGET} times" in message
    # The interrupted step is closed, not left open for ever.
    assert all(m.data["time"].get("completed") for m in session.messages.filter(role="assistant"))

    # Another tenant's run on the restarted workers completes, and the poisoned one is not taken up again.
    wait_workers_ready(2)
    other = make_session(charlie, script.load([[{"text": "charlie's answer"}]]))
    session_prompt(actor=charlie.actor, session=other, parts=text_prompt("hello"))
    other = wait_idle(other, timeout=90)
    assert text_of(other) == "charlie's answer"
    assert session.pk not in sessions_to_recover()
    assert model_calls(script, poison) == BUDGET
    assert Session.objects.get(pk=session.pk).status == "idle"
    assert_sound_log(session)
    assert_sound_log(other)
    assert_nothing_busy()
