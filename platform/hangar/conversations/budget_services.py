"""What a session shows when the usage gate (hangar.usage.gate) stops or warns before a model call: the
error the turn fails with (told by hangar.conversations.failure_services, as every failed turn is), the
events integrations follow and the audit row.

Named errors, so a client can tell them apart from a provider's failure: `BudgetExceededError` (a hard
limit; the session then ends idle with `{"blocked": "budget"}` in its status) and `ModelNotAllowedError`
(the org's allow-list). A soft limit tells `budget.alert` once per period, to the one run that claims it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from django.db import transaction

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.rawsql import run
from hangar.usage.gate import BudgetState, gate_params
from hangar.usage.models import Budget
from hangar.usage.services import budget_alert_claim

_BUDGET_TARGET = "usage.budget"


def _amount(value: float | None) -> str:
    return "none" if value is None else f"${value:.2f}"


def budget_blocked_error(state: BudgetState) -> dict:
    whose = {"org": "The org's", "project": "This project's", "member": "Your"}[state.scope]
    period = {"day": "daily", "month": "monthly"}[state.period]
    if state.needed:  # a reservation found no room
        message = (
            f"{whose} {period} budget has no room for this call: {_amount(state.spent)} spent and "
            f"{_amount(state.held)} reserved by calls in flight, of a {_amount(state.hard_limit)} hard "
            f"limit, and this call may cost up to {_amount(state.needed)}. An admin can raise it."
        )
    else:
        message = (
            f"{whose} {period} budget is used up: {_amount(state.spent)} spent of a "
            f"{_amount(state.hard_limit)} hard limit. An admin can raise it."
        )
    return {"name": "BudgetExceededError", "data": {"message": message, "budget": state.view()}}


@transaction.atomic
def session_budget_blocked(*, session: Session, state: BudgetState) -> dict:
    """Audit the stop and tell integrations (`budget.reached`). Returns the error the turn fails with (the
    engine tells it: hangar.conversations.failure_services)."""
    error = budget_blocked_error(state)
    audit_record(
        actor=system_actor(session.org_id, "budget"),
        action="budget.blocked",
        target_type=_BUDGET_TARGET,
        target_id=str(state.id),
        data={"session": session.pk, "project": session.project_id, "budget": state.view()},
    )
    # For integrations (the outbound webhooks' budget.reached): the stop, with the budget's state.
    publish(session, "budget.reached", {"sessionID": session.pk, "budget": state.view()})
    return error


@transaction.atomic
def session_model_refused(*, session: Session, model: str) -> dict:
    """Audit the refusal. Returns the error the turn fails with (told as any failed turn is)."""
    error = {
        "name": "ModelNotAllowedError",
        "data": {"message": f"The model {model} is not on this org's allow-list.", "model": model},
    }
    audit_record(
        actor=system_actor(session.org_id, "policy"),
        action="policy.model_refused",
        target=session,
        data={"session": session.pk, "project": session.project_id, "model": model},
    )
    return error


@transaction.atomic
def session_budget_alert(*, session: Session, state: BudgetState) -> bool:
    """Alert once per budget and period: the caller that claims it writes the event and the audit row."""
    if not budget_alert_claim(budget_id=state.id, period_start=state.period_start):
        return False
    audit_record(
        actor=system_actor(session.org_id, "budget"),
        action="budget.alert",
        target_type=_BUDGET_TARGET,
        target_id=str(state.id),
        data={"session": session.pk, "project": session.project_id, "budget": state.view()},
    )
    publish(session, "budget.alert", {"sessionID": session.pk, "budget": state.view()})
    return True


_RESERVE = (
    "SELECT blocked_budget, blocked_spent, blocked_held"
    " FROM hangar_budget_reserve(%s, %s, %s, %s, %s, %s, %s)"
)


def session_budget_reserve(
    *, session: Session, amount: float, hard: tuple[BudgetState, ...]
) -> BudgetState | None:
    """Reserve `amount` (the call's ceiling, US dollars) against every hard budget covering the session's
    next call, atomically with every other reserver of the org (the SQL function `hangar_budget_reserve`,
    conversations migration 0014: the budgets' rows locked, then spend + live holds + ceiling checked, one
    round trip). None: reserved (the call's ledger write settles it, hangar.usage.ledger_services); else
    the budget without room, as `hard` (the gate's read) has it, with what the reservation found. A hold is
    live while the session's run lease is, so a run that dies mid-call frees it with its lease."""
    p = gate_params(org_id=session.org_id, project_id=session.project_id, user_id=session.prompter_id)
    row = run(
        _RESERVE,
        [session.pk, p["org"], p["project"], p["user"], amount, p["today"], p["month"]],
    )[0]
    if row[0] is None:
        return None
    known = {b.id: b for b in hard}
    # A budget created since the gate's read is told with the limits it has now.
    state = known.get(row[0]) or _state_now(row[0], p["today"])
    return dataclasses.replace(state, spent=float(row[1]), held=float(row[2]), needed=amount)


def _state_now(budget_id: int, today: dt.date) -> BudgetState:
    b = Budget.objects.get(pk=budget_id)
    start = today if b.period == "day" else today.replace(day=1)
    return BudgetState(
        b.pk, b.scope, b.period, b.hard_limit, b.soft_limit, None, b.project_id, b.user_id, 0.0, start
    )
