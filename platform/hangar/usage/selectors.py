"""Reading spend: usage over a range grouped by day, member, project or model (from the daily rollup, so
the answer costs the same for an org with a million calls as for one with ten), the budgets, the
allow-list. Callers prove the reader may read (hangar.accounts.selectors.check_reader) and pass the org.
"""

from __future__ import annotations

import datetime as dt

from django.db.models import Sum

from hangar.accounts.models import Org, User
from hangar.errors import NotFound
from hangar.projects.models import Project
from hangar.usage.models import Budget, Dimension, ModelAllowList, UsageRecord, UsageRollup

# Each grouping reads the rollup rows of one dimension: (dimension, the column its rows are grouped by).
GROUPS = {
    "day": (Dimension.ORG, "day"),
    "member": (Dimension.MEMBER, "key"),
    "project": (Dimension.PROJECT, "key"),
    "model": (Dimension.MODEL, "key"),
}
# The columns each grouping's rows carry besides the sums (the CSV's first columns).
LABELS = {
    "day": ("day",),
    "member": ("user_id", "member"),
    "project": ("project_id", "project"),
    "model": ("provider", "model"),
}
SUMS = (
    "calls",
    "errors",
    "cost",
    "input_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "estimated_calls",  # calls whose tokens were counted by Hangar, not reported: their figures are estimates
)
MAX_DAYS = 366


def _label(org: Org, group: str, rows: list[dict]) -> None:
    """Turn each row's rollup key into what it names: a day, a member (id and email), a project (id and
    slug), a model (provider and model); one read for the emails or slugs."""
    if group == "day":
        for r in rows:
            r["day"] = r["day"].isoformat()
    elif group == "member":
        ids = {int(r["key"]) for r in rows}
        emails = dict(User.objects.filter(pk__in=ids).values_list("pk", "email"))
        for r in rows:
            r["user_id"] = int(r["key"]) or None
            r["member"] = emails.get(r["user_id"], "")
    elif group == "project":
        ids = {int(r["key"]) for r in rows}
        slugs = dict(Project.objects.filter(org=org, pk__in=ids).values_list("pk", "slug"))
        for r in rows:
            r["project_id"] = int(r["key"]) or None
            r["project"] = slugs.get(r["project_id"], "")
    else:
        for r in rows:
            r["provider"], _, r["model"] = r["key"].partition("/")
    for r in rows:
        r.pop("key", None)


def usage_report(*, org: Org, start: dt.date, end: dt.date, group: str) -> dict:
    """Spend and tokens per `group` key from `start` to `end` (UTC days, both included), with totals."""
    dim, column = GROUPS[group]
    base = UsageRollup.objects.filter(org_id=org.pk, dim=dim, day__gte=start, day__lte=end)
    rows = list(base.values(column).annotate(**{name: Sum(name) for name in SUMS}).order_by(column))
    totals = {name: sum(r[name] or 0 for r in rows) for name in SUMS}
    totals["cost"] = round(totals["cost"], 6)
    for r in rows:
        r["cost"] = round(r["cost"] or 0.0, 6)
    _label(org, group, rows)
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "group_by": group,
        "rows": rows,
        "totals": totals,
    }


def ledger_totals(*, org_id: int) -> dict:
    """The org's ledger summed (not the rollup): what the rollup must agree with."""
    sums = UsageRecord.objects.filter(org_id=org_id).aggregate(cost=Sum("cost"), input=Sum("input_tokens"))
    return {"cost": sums["cost"] or 0.0, "input_tokens": sums["input"] or 0}


def budget_list(*, org: Org) -> list[Budget]:
    return list(Budget.objects.filter(org=org).order_by("id"))


def budget_get(*, org: Org, budget_id: int) -> Budget:
    budget = Budget.objects.filter(org=org, pk=budget_id).first()
    if budget is None:
        raise NotFound()
    return budget


def model_allowlist(*, org: Org) -> list[str]:
    row = ModelAllowList.objects.filter(org=org).first()
    return list(row.allowed) if row else []


def offered_models(*, org: Org, membership, default: str = "") -> list[str]:
    """The "provider/model" names a member may pick in this org: `default` (the project's), the models its
    credentials (org-wide and the member's own) name, and the allow-list's "provider/model" entries, kept
    only if the allow-list lets them be called; `default` first, then by name."""
    from hangar.projects.selectors import credential_list

    allowed = model_allowlist(org=org)
    usable = [  # an admin sees other members' own credentials, but a run uses only the prompter's
        c for c in credential_list(org=org, membership=membership) if c.user_id in (None, membership.user_id)
    ]
    named = [f"{c.provider}/{m}" for c in usable for m in c.models_list or []]
    named += [entry for entry in allowed if "/" in entry]

    def may(name: str) -> bool:
        return not allowed or name in allowed or name.partition("/")[2] in allowed

    rest = sorted({name for name in named if name != default and may(name)})
    return ([default] if default and "/" in default else []) + rest
