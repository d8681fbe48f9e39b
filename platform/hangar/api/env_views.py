"""Project env vars. Secret values are write-only: the API returns `value: null` for them. Sandbox-safe
(non-secret) values are returned, since they end up in the sandbox anyway. A secret's `scope` says which
processes get it (hangar.engine.agents.secret_env); `PUT …/env/<name>/scope` changes it without the value."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.projects import crypto
from hangar.projects.env_var_services import env_var_delete, env_var_scope_set, env_var_set
from hangar.projects.selectors import env_get, env_list, project_get


class SecretScope(serializers.Serializer):
    setup = serializers.BooleanField(help_text="the project's setup script gets it")
    commands = serializers.ListField(
        child=serializers.CharField(), help_text="bash command patterns (`npm publish *`) that get it"
    )
    mcp = serializers.ListField(child=serializers.CharField(), help_text="MCP servers that get it")


class EnvVarOut(serializers.Serializer):
    name = serializers.CharField()
    secret = serializers.BooleanField()
    value = serializers.CharField(allow_null=True, help_text="null for secret vars: they are write-only")
    scope = SecretScope()


class EnvVarSetIn(serializers.Serializer):
    value = serializers.CharField(allow_blank=True, trim_whitespace=False, max_length=32768)
    secret = serializers.BooleanField(default=True)
    scope = serializers.JSONField(required=False, help_text="a secret's scope; kept as it was when absent")


class ScopeIn(serializers.Serializer):
    scope = serializers.JSONField()


def env_out(var) -> dict:
    value = None if var.secret else crypto.decrypt(var.value_encrypted)
    scope = {"setup": var.scope_setup, "commands": var.scope_commands, "mcp": var.scope_mcp}
    return EnvVarOut({"name": var.name, "secret": var.secret, "value": value, "scope": scope}).data


class EnvListView(APIView):
    @extend_schema(operation_id="project_env_list", responses=EnvVarOut(many=True))
    def get(self, request, org, project_id):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        return Response([env_out(var) for var in env_list(project=project)])


class EnvDetailView(APIView):
    @extend_schema(operation_id="project_env_get", responses=EnvVarOut)
    def get(self, request, org, project_id, name):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        return Response(env_out(env_get(project=project, name=name)))

    @extend_schema(operation_id="project_env_set", request=EnvVarSetIn, responses=EnvVarOut)
    def put(self, request, org, project_id, name):
        scope = scope_for(request, org, Role.ADMIN)
        project = project_get(org=scope.org, project_id=project_id)
        body = EnvVarSetIn(data=request.data)
        body.is_valid(raise_exception=True)
        var = env_var_set(actor=scope.actor, project=project, name=name, **body.validated_data)
        return Response(env_out(var))

    @extend_schema(operation_id="project_env_delete", responses={204: None})
    def delete(self, request, org, project_id, name):
        scope = scope_for(request, org, Role.ADMIN)
        project = project_get(org=scope.org, project_id=project_id)
        env_var_delete(actor=scope.actor, var=env_get(project=project, name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)


class EnvScopeView(APIView):
    @extend_schema(operation_id="project_env_scope_set", request=ScopeIn, responses=EnvVarOut)
    def put(self, request, org, project_id, name):
        scope = scope_for(request, org, Role.ADMIN)
        project = project_get(org=scope.org, project_id=project_id)
        body = ScopeIn(data=request.data)
        body.is_valid(raise_exception=True)
        var = env_var_scope_set(
            actor=scope.actor, var=env_get(project=project, name=name), scope=body.validated_data["scope"]
        )
        return Response(env_out(var))
