"""Org caps on project settings (any member reads them, as they read projects; admins and owners set
them), and an admin's override of a budget's hard limit for its current period."""

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.api.usage_views import BudgetOut, budget_out
from hangar.projects.caps_services import NUMERIC_CAPS, org_project_caps_set, projects_over
from hangar.projects.models import NetworkPolicy
from hangar.usage.selectors import budget_get
from hangar.usage.services import MAX_OVERRIDE, budget_override


class CapsIO(serializers.Serializer):
    caps = serializers.DictField(
        help_text='{"sandbox_cpus": max, "sandbox_memory_mb": max, "sandbox_disk_mb": max, '
        '"network_policies": ["none", "allowlist"]}; a missing key: no cap'
    )


class CapsOut(serializers.Serializer):
    """The caps an org set (projects.caps_services.clean_caps); a missing key: no cap."""

    sandbox_cpus = serializers.FloatField(required=False)
    sandbox_memory_mb = serializers.FloatField(required=False)
    sandbox_disk_mb = serializers.FloatField(required=False)
    network_policies = serializers.ListField(
        child=serializers.ChoiceField(choices=NetworkPolicy.choices), required=False
    )


@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "string"}]})
class CapValueField(serializers.Field):
    """A project's current value of the capped field: a number, or a network policy."""

    def to_representation(self, value):
        return value


class ProjectOverOut(serializers.Serializer):
    project = serializers.IntegerField(help_text="project id")
    field = serializers.ChoiceField(choices=[*NUMERIC_CAPS, "network_policy"])
    value = CapValueField()


class ProjectCapsOut(serializers.Serializer):
    caps = CapsOut()
    projects_over = ProjectOverOut(
        many=True, help_text="projects whose settings exceed the caps (kept; their next write must fit)"
    )


class ProjectCapsView(APIView):
    @extend_schema(operation_id="project_caps_get", responses=ProjectCapsOut)
    def get(self, request, org):
        scope = scope_for(request, org)
        caps = scope.org.project_caps or {}
        return Response({"caps": caps, "projects_over": projects_over(scope.org, caps)})

    @extend_schema(operation_id="project_caps_set", request=CapsIO, responses=ProjectCapsOut)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = CapsIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_project_caps_set(actor=scope.actor, org=scope.org, caps=body.validated_data["caps"])
        caps = updated.project_caps
        return Response({"caps": caps, "projects_over": projects_over(updated, caps)})


class OverrideIn(serializers.Serializer):
    amount = serializers.FloatField(
        help_text="US dollars more this period; 0 withdraws the override",
        min_value=0,
        max_value=MAX_OVERRIDE,
    )


class BudgetOverrideView(APIView):
    @extend_schema(operation_id="budgets_override", request=OverrideIn, responses=BudgetOut)
    def post(self, request, org, budget_id):
        scope = scope_for(request, org, Role.ADMIN)
        budget = budget_get(org=scope.org, budget_id=budget_id)
        body = OverrideIn(data=request.data)
        body.is_valid(raise_exception=True)
        return Response(
            budget_out(
                budget_override(actor=scope.actor, budget=budget, amount=body.validated_data["amount"])
            )
        )
