"""The permission preview: for an agent, a tool (or permission) and a pattern, in one of the org's projects
or for the org alone, which rule decides and why (hangar.engine.agents.permission_preview), with the caller's own
member rules and, if given, a session layer to try. Members read it as
they read the policies themselves; another org's project is a 404."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.permission_rules import clean_permission_rules
from hangar.api.scoping import scope_for
from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import AGENTS
from hangar.engine.agents.permission_preview import preview
from hangar.engine.agents.permissions import org_policy_for, permission_for_tool
from hangar.projects.selectors import project_get


class PreviewIn(serializers.Serializer):
    agent = serializers.CharField(max_length=100, default="build")
    tool = serializers.CharField(max_length=100, required=False, help_text="a tool name (edit, bash...)")
    permission = serializers.CharField(max_length=100, required=False, help_text="or the permission itself")
    pattern = serializers.CharField(max_length=2000, default="*", trim_whitespace=False)
    project = serializers.IntegerField(
        required=False, allow_null=True, default=None, min_value=1, max_value=2**63 - 1
    )
    session_rules = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        default=list,
        max_length=200,
        help_text="a session layer to try: [{permission, pattern, action}] (only narrows)",
    )


ACTIONS = [perm.ALLOW, perm.ASK, perm.DENY]


class PreviewRuleOut(serializers.Serializer):
    permission = serializers.CharField()
    pattern = serializers.CharField()
    action = serializers.ChoiceField(choices=ACTIONS)


class DecidingRuleOut(serializers.Serializer):
    layer = serializers.ChoiceField(choices=perm.LAYERS, help_text="where the rule comes from")
    index = serializers.IntegerField(help_text="its position in that layer")
    rule = PreviewRuleOut()


class MatchedRuleOut(DecidingRuleOut):
    applies = serializers.BooleanField(help_text="this is the rule that decides")


class PermissionPreviewOut(serializers.Serializer):
    """hangar.engine.agents.permission_preview.preview."""

    agent = serializers.CharField()
    permission = serializers.CharField()
    pattern = serializers.CharField()
    action = serializers.ChoiceField(choices=ACTIONS, help_text="what the loop would do")
    decided_by = DecidingRuleOut(allow_null=True, help_text="null: no rule matches (the agent asks)")
    why = serializers.CharField()
    matched = MatchedRuleOut(many=True, help_text="every rule that matched, in merge order")


class PermissionPreviewView(APIView):
    @extend_schema(operation_id="permission_preview", request=PreviewIn, responses=PermissionPreviewOut)
    def post(self, request, org):
        scope = scope_for(request, org)
        body = PreviewIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        agent = AGENTS.get(data["agent"])
        if agent is None:
            raise ValidationError(
                {"agent": [f"No agent named {data['agent']!r}: one of {', '.join(AGENTS)}."]}
            )
        permission = data.get("permission") or (permission_for_tool(data["tool"]) if data.get("tool") else "")
        if not permission:
            raise ValidationError({"tool": ["Name a tool or a permission."]})
        rules: list = []
        if data["project"] is not None:
            rules = project_get(org=scope.org, project_id=data["project"]).permission_rules or []
        return Response(
            preview(
                agent=agent,
                permission=permission,
                pattern=data["pattern"],
                project_rules=rules,
                org_policy=org_policy_for(scope.org),
                # the caller's own member layer: what would happen in a run they start
                member_rules=scope.membership.permission_rules or [],
                session_rules=clean_permission_rules(data["session_rules"], field="session_rules"),
            )
        )
