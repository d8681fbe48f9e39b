"""Read-only project routes an OpenCode client asks for: /config, /agent, /path, /project/current,
/provider, /config/providers."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from hangar.opencode import meta
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]


class Config(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_config", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.config(self.scope.project, request.user.email))


class Agents(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_agents", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.agents(self.scope.project))


class Path(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_path", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.path())


class ProjectCurrent(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_project_current", responses={200: dict})
    def get(self, request, project_id):
        return Response(meta.project_info(self.scope.project))


class Providers(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_provider_list", responses={200: dict})
    def get(self, request, project_id):
        providers, default = meta.providers(self.scope.project)
        return Response({"all": providers, "default": default, "connected": [p["id"] for p in providers]})


class ConfigProviders(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_config_providers", responses={200: dict})
    def get(self, request, project_id):
        providers, default = meta.providers(self.scope.project)
        return Response({"providers": providers, "default": default})
