"""Hard budgets reserve each model call's ceiling before the call (issue 25, "hard budgets are checked
without a reservation"): runs of one org in flight at once cannot together pass a limit.

The scripts' models are priced at $0 an input token and $0.0001 an output token, and the project says
they write at most 100 tokens an answer, so a call's ceiling is exactly $0.01 (its prompt is free); each
answer reports 100 output tokens, so each call also costs $0.01."""

import datetime as dt
import json
import os

import pytest
from django.utils import timezone

from hangar.conversations.budget_services import session_budget_reserve
from hangar.conversations.models import Event, Session
from hangar.engine.services import session_prompt
from hangar.usage.gate import usage_gate
from hangar.usage.models import Budget, BudgetHold, UsageRecord
from tests.engine.conftest import text_prompt, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)

USAGE = {"usage": {"prompt_tokens": 1000, "completion_tokens": 100}}


def priced(start_worker, persona, script_ids):
    persona.project.model_limits = {f"scripted/{s}": {"context": 100_000, "output": 100} for s in script_ids}
    persona.project.save(update_fields=["model_limits"])
    prices = {f"scripted/{s}": {"input": 0, "output": 0.0001} for s in script_ids}
    os.environ["HANGAR_MODEL_PRICES"] = json.dumps(prices)
    try:
        return start_worker()
    finally:
        del os.environ["HANGAR_MODEL_PRICES"]


def streamed(script, script_id) -> int:
    return len([r for r in script.requests(script_id) if r.get("stream")])


def test_concurrent_calls_whose_ceilings_together_exceed_the_budget_only_those_that_fit_run(
    alice, script, make_session, start_worker
):
    # Each answer waits 3 s before its first byte, so the three runs are all in flight at once: each
    # checks the budget while the others' calls are still unpaid. Before reservations, every one saw $0
    # spent and all three ran ($0.03 spent of a $0.025 limit).
    ids = [script.load([[{"delay": 3.0}, {"text": f"answer {i}"}, USAGE]]) for i in range(3)]
    priced(start_worker, alice, ids)
    Budget.objects.create(org=alice.org, scope="org", period="day", hard_limit=0.025)
    sessions = [make_session(alice, s, title=f"named {i}") for i, s in enumerate(ids)]  # named: no title call
    for session in sessions:
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("go"))
    sessions = [wait_idle(s) for s in sessions]

    calls = [streamed(script, s) for s in ids]
    assert sorted(calls) == [0, 1, 1]  # two ceilings of $0.01 fit in $0.025; a third does not
    spent = sum(r.cost for r in UsageRecord.objects.filter(org_id=alice.org.pk))
    assert spent == pytest.approx(0.02) and spent <= 0.025
    refused = sessions[calls.index(0)]
    assert refused.status_detail["blocked"] == "budget"
    (error,) = [e.payload["error"] for e in Event.objects.filter(session=refused, type="session.error")]
    assert error["name"] == "BudgetExceededError"
    assert "no room for this call" in error["data"]["message"]
    assert error["data"]["budget"]["needed"] == pytest.approx(0.01)
    assert error["data"]["budget"]["spent"] + error["data"]["budget"]["held"] == pytest.approx(0.02)
    for ran in (s for s, n in zip(sessions, calls, strict=True) if n):
        assert ran.cost == pytest.approx(0.01) and "blocked" not in ran.status_detail
    assert not BudgetHold.objects.exists()  # each run's end deleted its settled hold


def hard_budgets(persona, session):
    return usage_gate(
        org_id=persona.org.pk,
        project_id=session.project_id,
        user_id=session.prompter_id,
        provider="scripted",
        model="m",
    ).hard


def leased(session: Session, live: bool) -> Session:
    """The session as a run in a worker holds it (live) or as a dead run left it (expired)."""
    expires = timezone.now() + dt.timedelta(seconds=30 if live else -30)
    Session.objects.filter(pk=session.pk).update(lease_owner="a-worker", lease_expires_at=expires)
    return session


def test_a_hold_counts_only_while_its_run_holds_the_lease(alice, make_session, script):
    script_id = script.load([[{"text": "unused"}]])
    first, second = (leased(make_session(alice, script_id), live=True) for _ in range(2))
    first.prompter_id = second.prompter_id = alice.user.pk
    Budget.objects.create(
        org=alice.org, scope="member", user_id=alice.user.pk, period="month", hard_limit=1.0
    )
    hard = hard_budgets(alice, first)
    assert len(hard) == 1

    assert session_budget_reserve(session=first, amount=0.75, hard=hard) is None  # held
    refused = session_budget_reserve(session=second, amount=0.5, hard=hard)
    assert refused is not None and (refused.held, refused.needed) == (pytest.approx(0.75), 0.5)
    assert session_budget_reserve(session=second, amount=0.25, hard=hard) is None  # exactly fits

    # The first run dies mid-call: once its lease expires, its hold no longer counts.
    leased(first, live=False)
    assert session_budget_reserve(session=second, amount=1.0, hard=hard) is None
    # A session reserving again replaces its own hold, never adds to it.
    assert session_budget_reserve(session=second, amount=1.0, hard=hard) is None


def test_an_org_without_hard_budgets_reserves_nothing(alice, bob, make_session, script):
    script_id = script.load([[{"text": "unused"}]])
    session = leased(make_session(alice, script_id), live=True)
    session.prompter_id = alice.user.pk
    Budget.objects.create(org=alice.org, scope="org", period="day", soft_limit=0.01)  # soft only
    Budget.objects.create(org=alice.org, scope="member", user_id=bob.user.pk, period="day", hard_limit=0.01)
    assert hard_budgets(alice, session) == ()  # bob's budget does not cover alice's call
    assert session_budget_reserve(session=session, amount=5.0, hard=()) is None
    assert not BudgetHold.objects.exists()
