"""Retries, abort, and a message sent while the agent works (a worker killed mid-step: tests/faults)."""

import time

import pytest

from hangar.conversations.models import Event, Part, Session
from hangar.engine.services import session_abort, session_prompt
from hangar.engine.turn.retry import retry_delay
from tests.engine.conftest import assistant_messages, text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def bash(call_id, command):
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


def test_retry_delays_follow_the_headers_then_the_backoff():
    assert retry_delay(1, {"retry-after-ms": "250"}) == 0.25
    assert retry_delay(1, {"Retry-After": "3"}) == 3.0
    assert [retry_delay(n) for n in (1, 2, 3, 4, 5, 6)] == [2, 4, 8, 16, 30, 30]


def test_a_rate_limited_call_is_retried_honouring_retry_after_ms(alice, script, make_session, worker):
    script_id = script.load(
        [
            [{"error": 429, "headers": {"retry-after-ms": "300"}, "message": "slow down"}],
            [{"text": "answered after the retry"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    session = wait_idle(session)

    retry = Part.objects.get(session=session, type="retry").data
    assert retry["attempt"] == 1 and retry["error"]["data"]["statusCode"] == 429
    statuses = [
        e.payload["status"]
        for e in Event.objects.filter(session=session, type="session.status").order_by("seq")
    ]
    assert any(s["type"] == "retry" and s["attempt"] == 1 and s["message"] for s in statuses)
    assert text_of(session) == "answered after the retry"
    assert len([r for r in script.requests(script_id) if r.get("stream")]) == 2


def test_after_the_maximum_attempts_the_session_ends_in_a_clear_error(alice, script, make_session, worker):
    overloaded = [{"error": 503, "headers": {"retry-after-ms": "10"}, "message": "overloaded"}]
    script_id = script.load([overloaded] * 10)
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hi"))
    session = wait_idle(session)

    message = assistant_messages(session)[-1]
    assert message["error"]["name"] == "APIError" and "overloaded" in message["error"]["data"]["message"]
    assert Part.objects.filter(session=session, type="retry").count() == 5
    assert len([r for r in script.requests(script_id) if r.get("stream")]) == 6
    assert Event.objects.filter(session=session, type="session.error").exists()


def test_abort_mid_command_kills_it_and_leaves_the_session_idle_quickly(alice, script, make_session, worker):
    script_id = script.load([[bash("c1", "sleep 30")], [{"text": "never"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("sleep"))
    wait_for(lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running")
    time.sleep(0.5)

    started = time.monotonic()
    session_abort(actor=alice.actor, session=session)
    session = wait_idle(session, timeout=10)
    assert time.monotonic() - started < 5
    part = tool_parts(session)[0]
    assert part["state"]["status"] == "error" and part["state"]["error"] == "Tool execution aborted"
    assert assistant_messages(session)[-1]["error"]["name"] == "MessageAbortedError"
    assert not Session.objects.get(pk=session.pk).abort_requested


def test_abort_while_the_model_hangs_stops_the_stream(alice, script, make_session, worker):
    script_id = script.load([[{"text": "thinking"}, {"hang": 60}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hang"))
    wait_for(
        lambda: Part.objects.filter(session=session, type="step-start").exists(), what="the step to start"
    )
    time.sleep(0.5)
    started = time.monotonic()
    session_abort(actor=alice.actor, session=session)
    wait_idle(session, timeout=10)
    assert time.monotonic() - started < 5


def test_a_message_sent_mid_loop_is_admitted_at_the_next_step_as_a_system_reminder(
    alice, script, make_session, worker
):
    script_id = script.load([[bash("c1", "sleep 2")], [{"text": "saw the correction"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("start"))
    wait_for(lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running")

    session_prompt(
        actor=alice.actor,
        session=Session.objects.get(pk=session.pk),
        parts=text_prompt("use port 8080 instead"),
    )
    session = wait_idle(session)
    second = [r for r in script.requests(script_id) if r.get("stream")][1]
    last_user = [m for m in second["messages"] if m["role"] == "user"][-1]["content"]
    assert "<system-reminder>" in last_user and "use port 8080 instead" in last_user
    assert text_of(session) == "saw the correction"
    assert len([r for r in script.requests(script_id) if r.get("stream")]) == 2
