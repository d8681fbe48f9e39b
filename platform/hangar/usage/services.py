"""Writes about spend limits: budgets and the model allow-list (admins, audited with before and after),
and the once-per-period claim of a soft alert. Recording model calls is `ledger_services`."""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import ValidationError
from hangar.projects.models import Project
from hangar.usage.models import Budget, BudgetPeriod, BudgetScope, ModelAllowList


def budget_view(budget: Budget | None) -> dict | None:
    """What the audit log and the API show of a budget."""
    if budget is None:
        return None
    return {
        "id": budget.pk,
        "scope": budget.scope,
        "project": budget.project_id,
        "member": budget.user_id,
        "period": budget.period,
        "hard_limit": budget.hard_limit,
        "soft_limit": budget.soft_limit,
        "override": (
            {"amount": budget.override_amount, "period_start": budget.override_for.isoformat()}
            if budget.override_for and budget.override_amount
            else None
        ),
    }


MAX_LIMIT = 1_000_000_000.0  # US dollars: beyond it a limit means nothing, and a float loses cents


def _limit(name: str, value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_LIMIT:
        raise ValidationError({name: [f"An amount in US dollars from 0 to {MAX_LIMIT:.0f}, or null."]})
    return float(value)


def _scope_target(org: Org, scope: str, project_id, user_id) -> tuple[int | None, int | None]:
    """The (project, member) a budget of `scope` names, checked to belong to the org."""
    if scope == BudgetScope.ORG:
        return None, None
    if scope == BudgetScope.PROJECT:
        if not isinstance(project_id, int) or not Project.objects.filter(org=org, pk=project_id).exists():
            raise ValidationError({"project": ["A project of this org is required for a project budget."]})
        return project_id, None
    if not isinstance(user_id, int) or not Membership.objects.filter(org=org, user_id=user_id).exists():
        raise ValidationError({"member": ["A member of this org (user id) is required for a member budget."]})
    return None, user_id


@transaction.atomic
def budget_set(
    *,
    actor: Actor,
    org: Org,
    scope: str,
    period: str,
    hard_limit=None,
    soft_limit=None,
    project_id=None,
    user_id=None,
) -> Budget:
    """Create or replace the budget of (scope, target, period). A limit of None removes that limit."""
    require_role(actor, org.pk, Role.ADMIN)
    if scope not in BudgetScope.values:
        raise ValidationError({"scope": [f"Must be one of: {', '.join(BudgetScope.values)}."]})
    if period not in BudgetPeriod.values:
        raise ValidationError({"period": [f"Must be one of: {', '.join(BudgetPeriod.values)}."]})
    hard, soft = _limits(hard_limit, soft_limit)
    project_id, user_id = _scope_target(org, scope, project_id, user_id)
    budget = (
        Budget.objects.select_for_update()
        .filter(org=org, scope=scope, project_id=project_id, user_id=user_id, period=period)
        .first()
    )
    before = budget_view(budget)
    if budget is None:
        budget = Budget(org=org, scope=scope, project_id=project_id, user_id=user_id, period=period)
    elif soft != budget.soft_limit:
        budget.alerted_for = None  # a new soft limit alerts afresh
    budget.hard_limit, budget.soft_limit = hard, soft
    budget.save()
    audit_record(
        actor=actor, action="budget.set", target=budget, data={"before": before, "after": budget_view(budget)}
    )
    return budget


def _limits(hard_limit, soft_limit) -> tuple[float | None, float | None]:
    hard, soft = _limit("hard_limit", hard_limit), _limit("soft_limit", soft_limit)
    if hard is None and soft is None:
        raise ValidationError({"hard_limit": ["Set a hard limit, a soft limit, or both."]})
    if hard is not None and soft is not None and soft > hard:
        raise ValidationError({"soft_limit": ["The soft limit cannot exceed the hard limit."]})
    return hard, soft


@transaction.atomic
def budget_limits_set(*, actor: Actor, budget: Budget, hard_limit=None, soft_limit=None) -> Budget:
    """Change an existing budget's limits in place (its scope, target and period stay). A limit of None
    removes that limit; audited as `budget.set` with before and after."""
    require_role(actor, budget.org_id, Role.ADMIN)
    hard, soft = _limits(hard_limit, soft_limit)
    budget = Budget.objects.select_for_update().get(pk=budget.pk)
    before = budget_view(budget)
    if soft != budget.soft_limit:
        budget.alerted_for = None  # a new soft limit alerts afresh
    budget.hard_limit, budget.soft_limit = hard, soft
    budget.save()
    audit_record(
        actor=actor, action="budget.set", target=budget, data={"before": before, "after": budget_view(budget)}
    )
    return budget


@transaction.atomic
def budget_delete(*, actor: Actor, budget: Budget) -> None:
    require_role(actor, budget.org_id, Role.ADMIN)
    audit_record(actor=actor, action="budget.delete", target=budget, data={"before": budget_view(budget)})
    Budget.objects.filter(pk=budget.pk).delete()


@transaction.atomic
def model_allowlist_set(*, actor: Actor, org: Org, allowed: list) -> ModelAllowList:
    """Replace the org's allow-list ("provider/model" or bare model ids; empty: every model)."""
    require_role(actor, org.pk, Role.ADMIN)
    if not isinstance(allowed, list):
        raise ValidationError({"models": ["A list of model names."]})
    for index, item in enumerate(allowed):
        if not isinstance(item, str) or not item.strip() or len(item) > 300:
            raise ValidationError({"models": [f"Item {index}: a model name such as 'openai/gpt-4o'."]})
    cleaned = list(dict.fromkeys(item.strip() for item in allowed))
    row = ModelAllowList.objects.select_for_update().filter(org=org).first()
    before = list(row.allowed) if row else []
    row = row or ModelAllowList(org=org)
    row.allowed = cleaned
    row.save()
    audit_record(
        actor=actor,
        action="policy.model_allowlist.set",
        target_type="accounts.org",
        target_id=str(org.pk),
        data={"before": before, "after": cleaned},
    )
    return row


def budget_alert_claim(*, budget_id: int, period_start: dt.date) -> bool:
    """Mark the budget as alerted for the period; True for the one caller that did it first."""
    return bool(
        Budget.objects.filter(pk=budget_id).exclude(alerted_for=period_start).update(alerted_for=period_start)
    )


MAX_OVERRIDE = 1_000_000.0


def period_start(period: str, today: dt.date) -> dt.date:
    return today if period == BudgetPeriod.DAY else today.replace(day=1)


@transaction.atomic
def budget_override(*, actor: Actor, budget: Budget, amount) -> Budget:
    """Let `amount` US dollars more be spent past the hard limit in the budget's current period (admins,
    audited); 0 withdraws the override. It lapses when the period ends."""
    require_role(actor, budget.org_id, Role.ADMIN)
    if isinstance(amount, bool) or not isinstance(amount, int | float) or not 0 <= amount <= MAX_OVERRIDE:
        raise ValidationError({"amount": [f"An amount in US dollars between 0 and {MAX_OVERRIDE:.0f}."]})
    budget = Budget.objects.select_for_update().get(pk=budget.pk)
    if budget.hard_limit is None:
        raise ValidationError({"amount": ["This budget has no hard limit to override."]})
    before = budget_view(budget)
    today = timezone.now().astimezone(dt.UTC).date()
    budget.override_amount = float(amount)
    budget.override_for = period_start(budget.period, today) if amount else None
    budget.save(update_fields=["override_amount", "override_for", "updated_at"])
    audit_record(
        actor=actor,
        action="budget.override",
        target=budget,
        data={"before": before, "after": budget_view(budget)},
    )
    return budget
