"""OpenCode's `/mcp` routes (1.18.33 shapes) over a project's MCP servers (hangar.engine.mcp.services):
GET status map, POST add `{name, config}`, POST `/{name}/connect` and `/{name}/disconnect` (booleans). Any
member reads and connects an enabled server; adding, enabling and disabling change the project's config and
need an admin. OAuth (`/mcp/{name}/auth*`) is per member: each authorizes a server for themselves and the
status map is the asking member's (hangar.engine.mcp.oauth)."""

from collections.abc import Callable
from typing import Any

from django.http import JsonResponse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from hangar.accounts.models import Role
from hangar.engine.mcp import oauth, services
from hangar.engine.mcp.errors import McpError
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]


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
        return Response(oauth.member_status(self.scope.project, self.scope.actor.user_id))

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


class _McpAuthView(OpenCodeView):
    """The acting member's OAuth for one server (hangar.engine.mcp.oauth): 404 McpServerNotFoundError for
    an unknown name, 400 McpUnsupportedOAuthError `{error}` for a local server or `oauth: false`, 400
    `{error}` when the server's OAuth metadata, registration or token exchange fails."""

    def _answer(self, name: str, work: Callable[[], Any]) -> Response | JsonResponse:
        try:
            return Response(work())
        except services.ServerNotFound:
            return _not_found(name)
        except (oauth.OAuthUnsupported, oauth.OAuthStateError, McpError) as exc:
            return JsonResponse({"error": str(exc)}, status=400)


class McpAuth(_McpAuthView):
    """POST starts the member's flow: `{authorizationUrl, oauthState}`; the browser comes back to Hangar's
    callback (/api/mcp/oauth/callback). DELETE forgets the member's tokens and revokes them."""

    @extend_schema(tags=OC, operation_id="oc_mcp_auth", request=None, responses={200: dict, 400: dict})
    def post(self, request, project_id, name):
        scope = self.scope
        return self._answer(
            name, lambda: oauth.oauth_start(actor=scope.actor, project=scope.project, name=name)
        )

    @extend_schema(tags=OC, operation_id="oc_mcp_auth_remove", request=None, responses={200: dict})
    def delete(self, request, project_id, name):
        scope = self.scope

        def forget() -> dict[str, bool]:
            return {"success": oauth.oauth_forget(actor=scope.actor, project=scope.project, name=name)}

        return self._answer(name, forget)


class CallbackIn(serializers.Serializer):
    code = serializers.CharField(max_length=oauth.MAX_CODE)


class McpAuthCallback(_McpAuthView):
    """POST `{code}`: the member's pending flow for the server finished with that code (a client that read
    the code off the authorization server's redirect itself); answers the member's MCPStatus."""

    @extend_schema(tags=OC, operation_id="oc_mcp_auth_callback", request=CallbackIn, responses={200: dict})
    def post(self, request, project_id, name):
        body = CallbackIn(data=request.data)
        body.is_valid(raise_exception=True)
        scope = self.scope
        return self._answer(
            name,
            lambda: oauth.oauth_finish_for_member(
                actor=scope.actor, project=scope.project, name=name, code=body.validated_data["code"]
            ),
        )


class McpAuthAuthenticate(_McpAuthView):
    """POST answers the member's MCPStatus of the server. OpenCode's CLI starts the flow, opens a browser on
    its own machine and waits on a local port for the redirect; a hosted Hangar has no browser to open and
    no port the member's browser could reach, so this does not authorize anything: the member opens the
    `authorizationUrl` that POST /mcp/{name}/auth gave, the authorization server sends the browser to
    Hangar's callback, and this then says `connected`."""

    @extend_schema(tags=OC, operation_id="oc_mcp_auth_authenticate", request=None, responses={200: dict})
    def post(self, request, project_id, name):
        scope = self.scope

        def current() -> dict[str, Any]:
            oauth.oauth_server(scope.project, name)
            return oauth.member_status(scope.project, scope.actor.user_id)[name]

        return self._answer(name, current)
