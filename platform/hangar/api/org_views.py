"""Orgs: list the ones I belong to, create one (I become its owner), read one; the org permission policy and
the org's instructions to the agent."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.actors import actor_from_request
from hangar.accounts.models import ApiToken, Role
from hangar.accounts.org_policy_services import (
    org_instructions_set,
    org_mcp_policy_set,
    org_permission_policy_set,
    org_share_policy_set,
)
from hangar.accounts.selectors import memberships_for_user
from hangar.accounts.services import member_permission_rules_set, org_create
from hangar.api.scoping import scope_for


class OrgOut(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class OrgCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=150)
    slug = serializers.SlugField(max_length=80, required=False)


def org_out(org, role: str) -> dict:
    return OrgOut({"slug": org.slug, "name": org.name, "role": role, "created_at": org.created_at}).data


class OrgListCreateView(APIView):
    @extend_schema(operation_id="orgs_list", responses=OrgOut(many=True))
    def get(self, request):
        memberships = memberships_for_user(request.user)
        if isinstance(request.auth, ApiToken):
            memberships = memberships.filter(org_id=request.auth.org_id)
        return Response([org_out(m.org, m.role) for m in memberships])

    @extend_schema(operation_id="orgs_create", request=OrgCreateIn, responses={201: OrgOut})
    def post(self, request):
        body = OrgCreateIn(data=request.data)
        body.is_valid(raise_exception=True)
        org = org_create(actor=actor_from_request(request, None), **body.validated_data)
        return Response(org_out(org, "owner"), status=status.HTTP_201_CREATED)


class OrgDetailView(APIView):
    @extend_schema(operation_id="orgs_get", responses=OrgOut)
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response(org_out(scope.org, scope.membership.role))


class PermissionPolicyIO(serializers.Serializer):
    rules = serializers.ListField(child=serializers.DictField(), help_text="[{permission, pattern, action}]")


class OrgPermissionPolicyView(APIView):
    """The org-wide permission policy: any member reads it, admins and owners replace it."""

    @extend_schema(operation_id="org_permission_policy_get", responses=PermissionPolicyIO)
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response({"rules": scope.org.permission_policy})

    @extend_schema(
        operation_id="org_permission_policy_set", request=PermissionPolicyIO, responses=PermissionPolicyIO
    )
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = PermissionPolicyIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_permission_policy_set(
            actor=scope.actor, org=scope.org, rules=body.validated_data["rules"]
        )
        return Response({"rules": updated.permission_policy})


class McpPolicyIO(serializers.Serializer):
    policy = serializers.JSONField(
        help_text='which MCP servers the org\'s agents may use: {"local": [command patterns], "remote": [URL'
        " patterns]}; `*` matches any run of characters"
    )


class OrgMcpPolicyView(APIView):
    """The org's MCP allow-list: any member reads it, admins and owners replace it."""

    @extend_schema(operation_id="org_mcp_policy_get", responses=McpPolicyIO)
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response({"policy": {"local": [], "remote": [], **(scope.org.mcp_policy or {})}})

    @extend_schema(operation_id="org_mcp_policy_set", request=McpPolicyIO, responses=McpPolicyIO)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = McpPolicyIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_mcp_policy_set(actor=scope.actor, org=scope.org, policy=body.validated_data["policy"])
        return Response({"policy": updated.mcp_policy})


class MyPermissionRulesView(APIView):
    """The caller's own rules in the org (the member layer: they only narrow what the org and project
    allow, for the runs the caller starts or prompts). Each person reads and replaces only their own."""

    @extend_schema(operation_id="member_permission_rules_get", responses=PermissionPolicyIO)
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response({"rules": scope.membership.permission_rules})

    @extend_schema(
        operation_id="member_permission_rules_set", request=PermissionPolicyIO, responses=PermissionPolicyIO
    )
    def put(self, request, org):
        scope = scope_for(request, org)
        body = PermissionPolicyIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = member_permission_rules_set(
            actor=scope.actor, org=scope.org, rules=body.validated_data["rules"]
        )
        return Response({"rules": updated.permission_rules})


class InstructionsIO(serializers.Serializer):
    text = serializers.CharField(
        allow_blank=True, trim_whitespace=False, help_text="what every session's agent is told, markdown"
    )


class OrgInstructionsView(APIView):
    """The org's instructions to the agent in every session (after the workspace's AGENTS.md): any member
    reads them, admins and owners replace them."""

    @extend_schema(operation_id="org_instructions_get", responses=InstructionsIO)
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response({"text": scope.org.instructions})

    @extend_schema(operation_id="org_instructions_set", request=InstructionsIO, responses=InstructionsIO)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = InstructionsIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_instructions_set(actor=scope.actor, org=scope.org, text=body.validated_data["text"])
        return Response({"text": updated.instructions})


class SharePolicyIO(serializers.Serializer):
    policy = serializers.ChoiceField(
        choices=["off", "members", "link"], help_text="who may open a session's share link"
    )


class OrgSharePolicyView(APIView):
    """Who may open the org's session share links (OpenCode's /share): any member reads it, admins and
    owners set it."""

    @extend_schema(operation_id="org_share_policy_get", responses=SharePolicyIO)
    def get(self, request, org):
        return Response({"policy": scope_for(request, org).org.share_policy})

    @extend_schema(operation_id="org_share_policy_set", request=SharePolicyIO, responses=SharePolicyIO)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = SharePolicyIO(data=request.data)
        body.is_valid(raise_exception=True)
        updated = org_share_policy_set(actor=scope.actor, org=scope.org, policy=body.validated_data["policy"])
        return Response({"policy": updated.share_policy})
