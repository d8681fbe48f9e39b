"""Spend through the real worker: each model call (steps and the title) is one ledger row written with the
step's cost, and the ledger equals the sessions' costs; a hard budget stops a session before the call that
would pass it; a soft budget alerts once; the org's allow-list refuses a model before any call.

Each step of these scripts reports 1,000 input and 100 output tokens; the worker prices the scripts' models
at $0.00001 and $0.0001 a token, so a step costs $0.02."""

import json

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Message, Session
from hangar.engine.services import session_prompt
from hangar.usage.models import Budget, ModelAllowList, UsageRecord, UsageRollup
from tests.engine.conftest import text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

STEP_COST = 0.02
USAGE = {"usage": {"prompt_tokens": 1000, "completion_tokens": 100}}


def tool_step(i: int) -> list:
    return [
        {
            "tool_calls": [
                {"name": "bash", "id": f"c{i}", "arguments": {"command": f"echo {i}", "description": "t"}}
            ]
        },
        USAGE,
    ]


# Each test's scripts by id, with their price per token (input, output): one price list for the module,
# so that its tests share one worker (tests/shared_workers.py).
CHEAP = (0.00001, 0.0001)
PRICED = {
    "spend-three": CHEAP,
    "spend-one": CHEAP,
    "spend-hard": (0, 0.0002),
    "spend-soft": CHEAP,
    "spend-never": CHEAP,
}


def priced_worker(module_workers):
    prices = {f"scripted/{s}": {"input": price[0], "output": price[1]} for s, price in PRICED.items()}
    return module_workers({"HANGAR_MODEL_PRICES": json.dumps(prices)})


def streamed(script, script_id) -> int:
    return len([r for r in script.requests(script_id) if r.get("stream")])


def test_the_ledger_has_a_row_per_call_and_equals_the_sessions_step_costs(
    alice, bob, script, make_session, module_workers
):
    three = script.load([tool_step(1), tool_step(2), [{"text": "done"}, USAGE]], script_id="spend-three")
    one = script.load([[{"text": "hi"}, USAGE]], script_id="spend-one")
    priced_worker(module_workers)
    first, second = make_session(alice, three), make_session(bob, one)
    session_prompt(actor=alice.actor, session=first, parts=text_prompt("three steps"))
    session_prompt(actor=bob.actor, session=second, parts=text_prompt("one step"))
    first, second = wait_idle(first), wait_idle(second)

    steps = UsageRecord.objects.filter(org_id=alice.org.pk, kind="step")
    assert steps.count() == 4 == streamed(script, three) + streamed(script, one)
    assert (
        sum(r.cost for r in steps) == pytest.approx(first.cost + second.cost) == pytest.approx(4 * STEP_COST)
    )
    row = steps.filter(session_id=first.pk).order_by("id").first()
    assert (row.org_id, row.project_id, row.user_id, row.source) == (
        alice.org.pk,
        alice.project.pk,
        alice.user.pk,
        "app",
    )
    assert (row.provider, row.model, row.input_tokens, row.output_tokens, row.outcome) == (
        "scripted",
        three,
        1000,
        100,
        "ok",
    )
    assert row.latency_ms is not None and row.latency_ms >= 0
    assert steps.get(session_id=second.pk).user_id == bob.user.pk  # the prompter, not the creator
    titles = UsageRecord.objects.filter(org_id=alice.org.pk, kind="title")
    assert titles.count() == 2 and {t.outcome for t in titles} == {"ok"}
    # The rollup agrees with the ledger, call for call (titles included).
    everything = UsageRecord.objects.filter(org_id=alice.org.pk)
    for dim in ("o", "p", "u", "m"):
        daily = UsageRollup.objects.filter(org_id=alice.org.pk, dim=dim)
        assert sum(d.calls for d in daily) == everything.count() == 6
        assert sum(d.cost for d in daily) == pytest.approx(sum(r.cost for r in everything))


def test_a_hard_budget_stops_the_session_before_the_call_that_would_pass_it(
    alice, script, make_session, module_workers
):
    script_id = script.load(
        [tool_step(i) for i in range(1, 6)] + [[{"text": "done"}, USAGE]], script_id="spend-hard"
    )
    # Each call reserves its ceiling first (tests/engine/test_budget_reservation.py): priced here so that
    # the ceiling (a free prompt, at most 100 tokens written) is the step's cost, $0.02.
    alice.project.model_limits = {f"scripted/{script_id}": {"context": 100_000, "output": 100}}
    alice.project.save(update_fields=["model_limits"])
    priced_worker(module_workers)
    Budget.objects.create(
        org=alice.org, scope="project", project_id=alice.project.pk, period="day", hard_limit=0.05
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("spend"))
    session = wait_idle(session)

    # $0.02 spent, then $0.04: a third step (estimated at the last one's $0.02) would pass $0.05.
    assert streamed(script, script_id) == 2
    assert session.cost == pytest.approx(0.04)
    assert session.status == "idle" and session.status_detail["blocked"] == "budget"
    errors = [e.payload["error"] for e in Event.objects.filter(session=session, type="session.error")]
    assert [e["name"] for e in errors] == ["BudgetExceededError"]
    assert "budget is used up" in errors[0]["data"]["message"]
    assert errors[0]["data"]["budget"]["spent"] == pytest.approx(0.04)
    audit = AuditEvent.objects.get(action="budget.blocked")
    assert (audit.org_id, audit.data["session"], audit.actor_type) == (alice.org.pk, session.pk, "system")
    answers = [m.data for m in Message.objects.filter(session=session, role="assistant").order_by("id")]
    # No third step: the prompt's answer ends with the stop, told in OpenCode's shape.
    assert [a.get("error", {}).get("name") for a in answers] == [None, None, "UnknownError"]
    assert answers[-1]["error"]["data"]["message"] == errors[0]["data"]["message"]
    assert not UsageRecord.objects.filter(kind="title").exists()  # a blocked turn makes no title call

    # Prompting again is refused at once: no call, the same clear error.
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("more"))
    session = wait_idle(session)
    assert streamed(script, script_id) == 2 and session.status_detail["blocked"] == "budget"
    assert Event.objects.filter(session=session, type="session.error").count() == 2


def test_a_soft_budget_alerts_once(alice, script, make_session, module_workers):
    script_id = script.load(
        [tool_step(1), tool_step(2), [{"text": "done"}, USAGE]], loop=True, script_id="spend-soft"
    )
    priced_worker(module_workers)
    Budget.objects.create(
        org=alice.org, scope="member", user_id=alice.user.pk, period="month", soft_limit=0.01
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("spend"))
    session = wait_idle(session)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("spend more"))
    session = wait_idle(session)

    assert session.cost > 0.01 and "blocked" not in session.status_detail  # soft: nothing stops
    alerts = Event.objects.filter(session=session, type="budget.alert")
    assert alerts.count() == 1 and alerts.get().payload["budget"]["soft_limit"] == 0.01
    assert AuditEvent.objects.filter(action="budget.alert").count() == 1
    assert not Event.objects.filter(session=session, type="session.error").exists()


def test_a_model_outside_the_allow_list_is_refused_before_any_call(
    alice, script, make_session, module_workers
):
    script_id = script.load([[{"text": "never"}, USAGE]], script_id="spend-never")
    priced_worker(module_workers)
    ModelAllowList.objects.create(org=alice.org, allowed=["scripted/some-other-model"])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))
    session = wait_idle(session)

    assert script.requests(script_id) == []  # not even the title
    errors = [e.payload["error"] for e in Event.objects.filter(session=session, type="session.error")]
    assert [e["name"] for e in errors] == ["ModelNotAllowedError"]
    assert f"scripted/{script_id}" in errors[0]["data"]["message"]
    assert AuditEvent.objects.get(action="policy.model_refused").data["model"] == f"scripted/{script_id}"
    (answer,) = Message.objects.filter(session=session, role="assistant")  # the refusal, no call
    assert answer.data["error"] == {"name": "UnknownError", "data": {"message": errors[0]["data"]["message"]}}
    assert not UsageRecord.objects.filter(session_id=session.pk).exists()
    assert Session.objects.get(pk=session.pk).status == "idle"
