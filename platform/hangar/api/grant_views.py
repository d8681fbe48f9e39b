"""REST endpoints for stored "always" permission grants of a project: list and revoke.
Mounted by hangar.api.urls under /api/orgs/<org>/projects/<pid>/permission-grants/."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.conversations.selectors import permission_grant_get
from hangar.engine.reply_services import permission_grant_list, permission_grant_revoke
from hangar.projects.selectors import project_get


class GrantOut(serializers.Serializer):
    id = serializers.IntegerField()
    scope = serializers.ChoiceField(choices=["session", "project"])
    sessionID = serializers.CharField(source="session_id", allow_null=True)
    permission = serializers.CharField()
    pattern = serializers.CharField()
    createdBy = serializers.EmailField(source="created_by.email", allow_null=True, default=None)
    createdAt = serializers.DateTimeField(source="created_at")
    revokedAt = serializers.DateTimeField(source="revoked_at", allow_null=True)


class PermissionGrantListView(APIView):
    @extend_schema(operation_id="permission_grant_list", responses=GrantOut(many=True))
    def get(self, request, org, project_id):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        return Response(GrantOut(permission_grant_list(actor=scope.actor, project=project), many=True).data)


class PermissionGrantRevokeView(APIView):
    @extend_schema(operation_id="permission_grant_revoke", responses=GrantOut)
    def delete(self, request, org, project_id, grant_id):
        scope = scope_for(request, org, Role.MEMBER)
        project = project_get(org=scope.org, project_id=project_id)
        grant = permission_grant_get(project=project, grant_id=grant_id)
        return Response(GrantOut(permission_grant_revoke(actor=scope.actor, grant=grant)).data)
