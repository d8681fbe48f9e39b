"""OpenCode's `/mcp` routes (1.18.33 shapes) over a project's MCP servers (hangar.engine.mcp.services):
GET status map, POST add `{name, config}`, POST `/{name}/connect` and `/{name}/disconnect` (booleans). Any
member reads and connects an enabled server; adding, enabling and disabling change the project's config and
need an admin. OAuth is not served yet: the auth routes answer 400 McpUnsupportedOAuthError saying so (after a
404 McpServerNotFoundError for an unknown name)."""

from django.http import JsonResponse
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.engine.mcp import services
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]
NO_OAUTH = (
    "OAuth for MCP servers is not supported by this Hangar server yet: give the server's credentials as "
    "headers naming a project secret ({env:NAME}) instead."
)


def _not_found(name: str) -> JsonResponse:
    return JsonResponse(
        {"_tag": "McpServerNotFoundError", "name": name, "message": f"MCP server not found: {name}"},
        status=404,
    )


class AddIn(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    config = serializers.JSONField()


class McpStatus(OpenCodeView):
    min_role = {"GET": Role.VIEWER, "POST": Role.ADMIN}

    @extend_schema(tags=OC, operation_id="oc_mcp", responses={200: dict})
    def get(self, request, project_id):
        return Response(services.mcp_status(self.scope.project))

    @extend_schema(tags=OC, operation_id="oc_mcp_add", request=AddIn, responses={200: dict})
    def post(self, request, project_id):
        body = AddIn(data=request.data)
        body.is_valid(raise_exception=True)
        answer = services.mcp_server_add(
            actor=self.scope.actor,
            project=self.scope.project,
            name=body.validated_data["name"],
            config=body.validated_data["config"],
        )
        return Response(answer)


class McpConnect(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_mcp_connect", request=None, responses={200: bool})
    def post(self, request, project_id, name):
        try:
            return Response(
                services.mcp_server_connect(actor=self.scope.actor, project=self.scope.project, name=name)
            )
        except services.ServerNotFound:
            return _not_found(name)


class McpDisconnect(OpenCodeView):
    min_role = {"POST": Role.ADMIN}

    @extend_schema(tags=OC, operation_id="oc_mcp_disconnect", request=None, responses={200: bool})
    def post(self, request, project_id, name):
        try:
            return Response(
                services.mcp_server_disconnect(actor=self.scope.actor, project=self.scope.project, name=name)
            )
        except services.ServerNotFound:
            return _not_found(name)


class McpAuth(OpenCodeView):
    """/mcp/{name}/auth (POST start, DELETE remove), /auth/callback, /auth/authenticate: not served yet."""

    def _unsupported(self, name: str) -> JsonResponse:
        try:
            services.mcp_server_exists(self.scope.project, name)
        except services.ServerNotFound:
            return _not_found(name)
        return JsonResponse({"error": NO_OAUTH}, status=400)

    @extend_schema(tags=OC, operation_id="oc_mcp_auth", request=None, responses={400: dict})
    def post(self, request, project_id, name):
        return self._unsupported(name)

    @extend_schema(tags=OC, operation_id="oc_mcp_auth_remove", request=None, responses={400: dict})
    def delete(self, request, project_id, name):
        return self._unsupported(name)


def _auth_step(step: str) -> type[McpAuth]:
    """The same answer under /auth/<step>, with operation ids of its own (the schema needs them unique)."""
    view: type[McpAuth] = extend_schema_view(
        post=extend_schema(tags=OC, operation_id=f"oc_mcp_auth_{step}", request=None, responses={400: dict}),
        delete=extend_schema(
            tags=OC, operation_id=f"oc_mcp_auth_{step}_remove", request=None, responses={400: dict}
        ),
    )(type(f"McpAuth{step.title()}", (McpAuth,), {}))
    return view


McpAuthCallback = _auth_step("callback")
McpAuthAuthenticate = _auth_step("authenticate")
