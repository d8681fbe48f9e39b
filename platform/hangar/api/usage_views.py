"""Usage and spend limits of an org: usage by day, member, project or model (JSON and CSV), budgets and
the model allow-list. Admins, owners and auditors read; admins and owners write; anyone else in the org
gets a 403, anyone outside it a 404."""

from __future__ import annotations

import csv
import datetime as dt
import io

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.accounts.selectors import check_reader
from hangar.api import csv_cells
from hangar.api.scoping import OrgScope, scope_for
from hangar.usage.models import BudgetPeriod, BudgetScope
from hangar.usage.selectors import (
    GROUPS,
    LABELS,
    MAX_DAYS,
    SUMS,
    budget_get,
    budget_list,
    model_allowlist,
    usage_report,
)
from hangar.usage.services import (
    MAX_LIMIT,
    budget_delete,
    budget_limits_set,
    budget_set,
    budget_view,
    model_allowlist_set,
)


def reader_scope(request, org: str) -> OrgScope:
    """The caller's scope if they may read the org's usage and audit log (admin, owner, auditor)."""
    scope = scope_for(request, org, Role.AUDITOR)
    check_reader(scope.membership)
    return scope


def _day(request, name: str, default: dt.date) -> dt.date:
    raw = request.query_params.get(name)
    if not raw:
        return default
    try:
        return dt.date.fromisoformat(raw)
    except ValueError:
        raise ValidationError({name: ["A date as YYYY-MM-DD."]}) from None


def _report(request, org: str) -> dict:
    scope = reader_scope(request, org)
    today = timezone.now().astimezone(dt.UTC).date()
    end = _day(request, "to", today)
    start = _day(request, "from", end - dt.timedelta(days=29))
    if start > end:
        raise ValidationError({"from": ["Must not be after 'to'."]})
    if (end - start).days >= MAX_DAYS:
        raise ValidationError({"from": [f"A range of at most {MAX_DAYS} days."]})
    group = request.query_params.get("group_by", "day")
    if group not in GROUPS:
        raise ValidationError({"group_by": [f"One of: {', '.join(GROUPS)}."]})
    return usage_report(org=scope.org, start=start, end=end, group=group)


USAGE_PARAMS = [
    OpenApiParameter("from", str, description="first UTC day, YYYY-MM-DD (default: 29 days before 'to')"),
    OpenApiParameter("to", str, description="last UTC day, included (default: today)"),
    OpenApiParameter("group_by", str, enum=list(GROUPS), description="default: day"),
]


class UsageTotalsOut(serializers.Serializer):
    calls = serializers.IntegerField()
    # DRF's metaclass moves declared fields off the class, so it never shadows Serializer.errors at run
    # time; the stubs see the class attribute.
    errors = serializers.IntegerField()  # type: ignore[assignment]
    cost = serializers.FloatField(help_text="US dollars")
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    reasoning_tokens = serializers.IntegerField()
    cache_read_tokens = serializers.IntegerField()
    cache_write_tokens = serializers.IntegerField()
    estimated_calls = serializers.IntegerField(help_text="calls whose tokens Hangar estimated")


class UsageRowOut(UsageTotalsOut):
    """One key of the grouping: its label columns (selectors.LABELS, only the group's own), and its sums."""

    day = serializers.DateField(required=False, help_text="group_by day")
    user_id = serializers.IntegerField(
        required=False, allow_null=True, help_text="group_by member; null: no person (an integration's run)"
    )
    member = serializers.CharField(required=False, allow_blank=True, help_text="group_by member: email")
    project_id = serializers.IntegerField(required=False, allow_null=True, help_text="group_by project")
    project = serializers.CharField(required=False, allow_blank=True, help_text="group_by project: slug")
    provider = serializers.CharField(required=False, allow_blank=True, help_text="group_by model")
    model = serializers.CharField(required=False, allow_blank=True, help_text="group_by model")


class UsageReportOut(serializers.Serializer):
    # `from` is a Python keyword: declared through the class namespace (DRF collects it the same way).
    locals()["from"] = serializers.DateField(help_text="first UTC day")
    to = serializers.DateField(help_text="last UTC day, included")
    group_by = serializers.ChoiceField(choices=list(GROUPS))
    rows = UsageRowOut(many=True)
    totals = UsageTotalsOut()


class UsageView(APIView):
    @extend_schema(operation_id="usage_report", parameters=USAGE_PARAMS, responses=UsageReportOut)
    def get(self, request, org):
        return Response(_report(request, org))


class UsageExportView(APIView):
    @extend_schema(
        operation_id="usage_export_csv", parameters=USAGE_PARAMS, responses={(200, "text/csv"): str}
    )
    def get(self, request, org):
        report = _report(request, org)
        keys = LABELS[report["group_by"]]
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([*keys, *SUMS])
        for row in report["rows"]:
            writer.writerow(csv_cells.row([row.get(k) or "" for k in keys] + [row[s] for s in SUMS]))
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        name = f"usage-{org}-{report['group_by']}-{report['from']}-{report['to']}.csv"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class BudgetIn(serializers.Serializer):
    scope = serializers.CharField()
    period = serializers.CharField()
    hard_limit = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_LIMIT
    )
    soft_limit = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_LIMIT
    )
    project = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=2**63 - 1
    )
    member = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="user id", min_value=1, max_value=2**63 - 1
    )


class BudgetLimitsIn(serializers.Serializer):
    hard_limit = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_LIMIT
    )
    soft_limit = serializers.FloatField(
        required=False, allow_null=True, default=None, min_value=0, max_value=MAX_LIMIT
    )


class BudgetOverrideOut(serializers.Serializer):
    amount = serializers.FloatField(help_text="US dollars more than the hard limit, this period only")
    period_start = serializers.DateField(help_text="the period it was granted for")


class BudgetOut(serializers.Serializer):
    """A budget as usage.services.budget_view shows it, with when it last changed."""

    id = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=BudgetScope.choices)
    project = serializers.IntegerField(allow_null=True, help_text="a project budget's project id")
    member = serializers.IntegerField(allow_null=True, help_text="a member budget's user id")
    period = serializers.ChoiceField(choices=BudgetPeriod.choices)
    hard_limit = serializers.FloatField(allow_null=True)
    soft_limit = serializers.FloatField(allow_null=True)
    override = BudgetOverrideOut(allow_null=True, help_text="null: no override this period")
    updated_at = serializers.DateTimeField()


def budget_out(budget) -> dict:
    return {**(budget_view(budget) or {}), "updated_at": budget.updated_at}


class BudgetListSetView(APIView):
    @extend_schema(operation_id="budgets_list", responses=BudgetOut(many=True))
    def get(self, request, org):
        scope = reader_scope(request, org)
        return Response([budget_out(b) for b in budget_list(org=scope.org)])

    @extend_schema(operation_id="budgets_set", request=BudgetIn, responses=BudgetOut)
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = BudgetIn(data=request.data)
        body.is_valid(raise_exception=True)
        v = body.validated_data
        budget = budget_set(
            actor=scope.actor,
            org=scope.org,
            scope=v["scope"],
            period=v["period"],
            hard_limit=v["hard_limit"],
            soft_limit=v["soft_limit"],
            project_id=v["project"],
            user_id=v["member"],
        )
        return Response(budget_out(budget))


class BudgetDetailView(APIView):
    @extend_schema(operation_id="budgets_get", responses=BudgetOut)
    def get(self, request, org, budget_id):
        scope = reader_scope(request, org)
        return Response(budget_out(budget_get(org=scope.org, budget_id=budget_id)))

    @extend_schema(operation_id="budgets_update", request=BudgetLimitsIn, responses=BudgetOut)
    def patch(self, request, org, budget_id):
        scope = scope_for(request, org, Role.ADMIN)
        budget = budget_get(org=scope.org, budget_id=budget_id)
        body = BudgetLimitsIn(data=request.data)
        body.is_valid(raise_exception=True)
        budget = budget_limits_set(actor=scope.actor, budget=budget, **body.validated_data)
        return Response(budget_out(budget))

    @extend_schema(operation_id="budgets_delete", responses={204: None})
    def delete(self, request, org, budget_id):
        scope = scope_for(request, org, Role.ADMIN)
        budget_delete(actor=scope.actor, budget=budget_get(org=scope.org, budget_id=budget_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AllowListIn(serializers.Serializer):
    models = serializers.ListField(child=serializers.CharField(max_length=300), allow_empty=True)


class AllowListOut(serializers.Serializer):
    models = serializers.ListField(
        child=serializers.CharField(), help_text='"model" or "provider/model"; empty: every model is allowed'
    )


class ModelAllowListView(APIView):
    @extend_schema(operation_id="model_allowlist_get", responses=AllowListOut)
    def get(self, request, org):
        scope = reader_scope(request, org)
        return Response({"models": model_allowlist(org=scope.org)})

    @extend_schema(operation_id="model_allowlist_set", request=AllowListIn, responses=AllowListOut)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = AllowListIn(data=request.data)
        body.is_valid(raise_exception=True)
        row = model_allowlist_set(actor=scope.actor, org=scope.org, allowed=body.validated_data["models"])
        return Response({"models": row.allowed})
