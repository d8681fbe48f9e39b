"""What a session shows when the usage gate (hangar.usage.gate) stops or warns before a model call: the
error the turn fails with (told by hangar.conversations.failure_services, as every failed turn is), the
events integrations follow and the audit row.

Named errors, so a client can tell them apart from a provider's failure: `BudgetExceededError` (a hard
limit; the session then ends idle with `{"blocked": "budget"}` in its status) and `ModelNotAllowedError`
(the org's allow-list). A soft limit tells `budget.alert` once per period, to the one run that claims it.
"""

from __future__ import annotations

from django.db import transaction

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.events import publish
from hangar.conversations.models import Session
from hangar.usage.gate import BudgetState
from hangar.usage.services import budget_alert_claim

_BUDGET_TARGET = "usage.budget"


def _amount(value: float | None) -> str:
    return "none" if value is None else f"${value:.2f}"


def budget_blocked_error(state: BudgetState) -> dict:
    whose = {"org": "The org's", "project": "This project's", "member": "Your"}[state.scope]
    period = {"day": "daily", "month": "monthly"}[state.period]
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
