"""A project's MCP servers as the asking member sees them, and their OAuth (hangar.engine.mcp.oauth): the
web app's MCP settings use exactly these.

- `GET  …/projects/<id>/mcp/` -> `{"<name>": MCPStatus}` (OpenCode's shape) for the requesting member;
- `POST …/projects/<id>/mcp/<name>/auth` -> `{"authorizationUrl", "oauthState"}`: the member opens the URL;
- `DELETE …/projects/<id>/mcp/<name>/auth` -> `{"success": true}`: the member's tokens forgotten, revoked;
- `GET /api/mcp/oauth/callback?code&state`: where the authorization server sends the browser back. The
  state finds the pending flow (no session cookie needed); with one, it must be the member who started
  it. Success is a 302 to the project's settings (`/o/<org slug>/p/<project id>/settings?mcp=<name>`); a
  bad, expired or replayed state, or a failed exchange, a 400 (JSON when asked for, else a short page).

Any member (viewer and up) reads and authorizes for themselves; a foreign org's project is a 404."""

from __future__ import annotations

from html import escape
from typing import Literal, TypedDict
from urllib.parse import quote, urlencode

from django.http import HttpResponse, HttpResponseRedirect, JsonResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.api.scoping import scope_for
from hangar.engine.mcp import oauth
from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.services import ServerNotFound
from hangar.projects.selectors import project_get


class _McpState(TypedDict):
    status: Literal["connected", "disabled", "failed", "needs_auth", "needs_client_registration"]


class McpStatus(_McpState, total=False):  # `total`, not NotRequired: this module's annotations are strings
    """OpenCode's MCPStatus of one server, for the asking member."""

    error: str


class AuthForgetOut(serializers.Serializer):
    success = serializers.BooleanField(
        help_text="always true: the member's tokens are gone (OpenCode's shape)"
    )


class AuthStartOut(serializers.Serializer):
    authorizationUrl = serializers.CharField()  # OpenCode's name
    oauthState = serializers.CharField()


def _refused(exc: Exception, status: int = 400) -> Response:
    return Response({"detail": str(exc)}, status=status)


class McpMemberStatusView(APIView):
    @extend_schema(
        operation_id="project_mcp_status",
        responses={
            200: dict[str, McpStatus]
        },  # a map: server name -> its status (a serializer cannot say it)
    )
    def get(self, request, org, project_id):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        return Response(oauth.member_status(project, scope.actor.user_id))


class McpAuthView(APIView):
    @extend_schema(operation_id="project_mcp_auth_start", request=None, responses={200: AuthStartOut})
    def post(self, request, org, project_id, name):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        try:
            return Response(oauth.oauth_start(actor=scope.actor, project=project, name=name))
        except ServerNotFound as exc:
            return _refused(exc, 404)
        except (oauth.OAuthUnsupported, McpError) as exc:
            return _refused(exc)

    @extend_schema(operation_id="project_mcp_auth_forget", request=None, responses={200: AuthForgetOut})
    def delete(self, request, org, project_id, name):
        scope = scope_for(request, org)
        project = project_get(org=scope.org, project_id=project_id)
        try:
            return Response({"success": oauth.oauth_forget(actor=scope.actor, project=project, name=name)})
        except ServerNotFound as exc:
            return _refused(exc, 404)


def _callback_refused(request, code: str, message: str) -> HttpResponse:
    if "application/json" in request.META.get("HTTP_ACCEPT", ""):
        return JsonResponse({"error": code, "detail": message}, status=400)
    page = (
        "<!doctype html><meta charset=utf-8><title>MCP authorization</title>"
        f"<h1>The MCP server was not authorized</h1><p>{escape(message)}</p>"
        "<p>Go back to the project's settings and start again.</p>"
    )
    return HttpResponse(page, status=400, content_type="text/html; charset=utf-8")


class McpOAuthCallbackView(APIView):
    permission_classes = [AllowAny]
    # The state is the credential; a browser's session, if it has one, must be the member's (checked below).
    authentication_classes = [SessionAuthentication]

    @extend_schema(
        operation_id="mcp_oauth_callback",
        parameters=[OpenApiParameter("code", str), OpenApiParameter("state", str)],
        responses={302: None, 400: dict},
    )
    def get(self, request):
        params = request.query_params
        signed_in = request.user.pk if request.user.is_authenticated else None
        try:
            project, name = oauth.oauth_callback(
                state=params.get("state", ""),
                code=params.get("code", ""),
                error=params.get("error", ""),
                signed_in=signed_in,
            )
        except oauth.OAuthStateError as exc:
            return _callback_refused(request, "mcp_oauth_state", str(exc))
        except (oauth.OAuthUnsupported, McpError, ServerNotFound) as exc:
            return _callback_refused(request, "mcp_oauth_failed", str(exc))
        where = f"/o/{quote(project.org.slug)}/p/{project.pk}/settings?{urlencode({'mcp': name})}"
        return HttpResponseRedirect(where)
