"""A project's cached environments (hangar.engine.workspace.env_cache): what its setup script left, kept per
repository commit, script, image and env, with their size. Members read the list; admins remove one."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.engine.workspace.env_cache import EnvironmentInUse, environment_delete, environments_of
from hangar.projects.selectors import project_get


class EnvironmentOut(serializers.Serializer):
    key = serializers.CharField()
    repo_url = serializers.CharField(help_text="empty: a project without a repository")
    commit = serializers.CharField()
    image = serializers.CharField()
    script = serializers.CharField(help_text="the first 12 hex digits of the setup script's SHA-256")
    bytes = serializers.IntegerField()
    files = serializers.IntegerField()
    created = serializers.FloatField(help_text="unix seconds")
    last_used = serializers.FloatField(help_text="unix seconds")


class InUse(APIException):
    status_code = 409
    default_detail = "Sessions stand on this environment; it is removed once none does."
    default_code = "in_use"


def _out(entry: dict) -> dict:
    return EnvironmentOut({k: entry.get(k, "") for k in EnvironmentOut().fields}).data


class EnvironmentListView(APIView):
    @extend_schema(operation_id="project_environments_list", responses=EnvironmentOut(many=True))
    def get(self, request, org, project_id):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        return Response([_out(e) for e in environments_of(project.org_id, project.pk)])


class EnvironmentDetailView(APIView):
    @extend_schema(operation_id="project_environment_delete", responses={204: None})
    def delete(self, request, org, project_id, key):
        scope = scope_for(request, org, Role.ADMIN)
        project = project_get(org=scope.org, project_id=project_id)
        try:
            environment_delete(actor=scope.actor, project=project, key=key)
        except EnvironmentInUse:
            raise InUse() from None
        return Response(status=status.HTTP_204_NO_CONTENT)
