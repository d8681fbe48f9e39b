"""A remote MCP server that takes OAuth, called with the tokens of the member a run acts for (the last to
prompt, else the session's creator), from the worker only.

- **Which token**: the member's grant for (project, server), bound to the server's URL
  (hangar.projects.mcp_oauth_services). An expired one is refreshed before the call, under the grant's row
  lock; a call the server refuses with a 401 refreshes once and is tried again (a 401 means it did not run).
- **No token**: a server whose config declares `oauth` offers nothing and shows `needs_auth` to that member
  (the run goes on without it); one that does not declare it is tried as it is, and shows `needs_auth` if it
  answers with an OAuth challenge.
- **Held sessions** (hangar.engine.mcp.held): the token is an `Authorization` header, so it is part of the
  session's key (a refresh, a revoke or another member opens another session), and the key's scope names
  the member too: one member's session is never another's.
- **Status**: each member's status of these servers is their own (`record`/`known`), in the cache beside
  the project's (hangar.engine.mcp.status)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.core.cache import cache

from hangar.engine.mcp import refusals
from hangar.engine.mcp.errors import McpError
from hangar.projects.mcp_oauth_services import mcp_grant_exists, mcp_grant_get, mcp_grant_refresh
from hangar.projects.models import Project

T = TypeVar("T")
LIST_TIMEOUT_S = 10.0
STATUS_TTL_S = 7 * 24 * 3600
NEEDS_AUTH = {"status": "needs_auth"}


class NeedsAuth(McpError):
    def __init__(self, name: str):
        super().__init__(f"{name} needs you to sign in to it (OAuth): authorize it in the project's settings")


def uses_oauth(server: dict[str, Any]) -> bool:
    """OAuth may be used: a remote server whose config does not say `oauth: false` (OpenCode's rule)."""
    return server.get("type") == "remote" and server.get("oauth") is not False


def declares_oauth(server: dict[str, Any]) -> bool:
    return server.get("type") == "remote" and isinstance(server.get("oauth"), dict)


def with_member_tokens(project_id: int, name: str, server: dict[str, Any], member: int | None) -> bool:
    """Whether a run of `member` calls the server as an OAuth one: it declares `oauth`, or the member holds
    a grant for it (the others call it as configured, sharing the project's session)."""
    if declares_oauth(server):
        return True
    return (
        uses_oauth(server)
        and member is not None
        and mcp_grant_exists(project_id=project_id, user_id=member, server=name, url=server["url"])
    )


def failure_status(server: dict[str, Any], exc: McpError) -> dict[str, Any]:
    """A failed listing's status: needs_auth when a server that may take OAuth answered with an OAuth
    challenge to a call without a token (OpenCode's auto-detection), else failed with why."""
    if uses_oauth(server) and refusals.refused(server["url"], None):
        return NEEDS_AUTH
    return {"status": "failed", "error": str(exc)}


def expired(grant: dict[str, Any], margin_s: float = 30.0) -> bool:
    expires_at = grant.get("expires_at")
    return isinstance(expires_at, int | float) and time.time() + margin_s >= expires_at


def _refreshed(grant: dict[str, Any], stale: str) -> dict[str, Any] | None:
    """The grant with new tokens (in the row's lock); unchanged when another process refreshed it first."""
    # The SDK is imported on first use, as hangar.engine.mcp.tools says why.
    from mcp.shared.auth import OAuthClientInformationFull

    from hangar.engine.mcp import oauth_http

    if grant.get("access_token") != stale:
        return grant
    if not grant.get("refresh_token"):
        return None
    client = OAuthClientInformationFull.model_validate(grant["client"])
    tokens = oauth_http.run(
        lambda http: oauth_http.refresh(
            http, grant["token_endpoint"], client, grant["refresh_token"], grant.get("resource")
        )
    )
    return None if tokens is None else {**grant, **tokens}


def bearer(project_id: int, user_id: int, server: str, url: str, *, refresh: bool = False) -> str | None:
    """The member's access token for the server, refreshed first when expired (or `refresh`); None when
    they hold no usable grant (never granted, revoked, or the refresh token was refused)."""
    grant = mcp_grant_get(project_id=project_id, user_id=user_id, server=server, url=url)
    if grant is None:
        return None
    if not refresh and not expired(grant):
        return str(grant["access_token"])
    stale = str(grant["access_token"])
    renewed = mcp_grant_refresh(
        project_id=project_id, user_id=user_id, server=server, url=url, refresh=lambda g: _refreshed(g, stale)
    )
    return None if renewed is None else str(renewed["access_token"])


@dataclass(eq=False)
class OAuthRemoteServer:
    name: str
    url: str
    headers: dict[str, str] = field(repr=False)  # secrets filled in: never printed
    timeout_s: float
    project_id: int
    member: int | None
    declared: bool  # the config declares `oauth`: no token, no call

    def list_tools(self) -> list[dict[str, Any]]:
        from hangar.engine.mcp import remote

        return self._with_token(lambda server: remote.list_tools(server, LIST_TIMEOUT_S))

    def call_tool(self, tool: str, arguments: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        from hangar.engine.mcp import remote

        return self._with_token(lambda server: remote.call_tool(server, tool, arguments, abort))

    @property
    def session_scope(self) -> str:
        """Who shares its held session: the project's member (also the key of its tools version)."""
        return f"{self.project_id}:member:{self.member}"

    def on_session(self, work: Callable[[Any], T]) -> T:
        """`work` on the member's session (prompts and resources: hangar.engine.mcp.content)."""
        return self._with_token(work)

    def _server(self, token: str | None) -> Any:
        from hangar.engine.mcp import remote

        headers = {**self.headers, "Authorization": f"Bearer {token}"} if token else self.headers
        return remote.Server(self.session_scope, self.name, self.url, headers, self.timeout_s)

    def _token(self, refresh: bool = False) -> str | None:
        if self.member is None:
            return None
        return bearer(self.project_id, self.member, self.name, self.url, refresh=refresh)

    def _with_token(self, work: Callable[[Any], T]) -> T:
        token = self._token()
        if token is None and self.declared:
            raise NeedsAuth(self.name)
        try:
            return work(self._server(token))
        except McpError:
            if not refusals.refused(self.url, token):
                raise
        if token is None:  # the server asked for OAuth: the member has not authorized it
            raise NeedsAuth(self.name)
        fresh = self._token(refresh=True)
        if fresh is None or fresh == token:
            raise NeedsAuth(self.name) from None
        try:
            return work(self._server(fresh))
        except McpError:
            if refusals.refused(self.url, fresh):
                raise NeedsAuth(self.name) from None
            raise


def _status_key(project: Project, user_id: int | None) -> str:
    return f"hangar:mcp-oauth-status:{project.pk}:{project.created_at.timestamp():.6f}:{user_id}"


def record(project: Project, user_id: int | None, statuses: dict[str, dict[str, Any]]) -> None:
    """A member's status of the OAuth servers (their own: another member's token says nothing of theirs)."""
    if statuses:
        cache.set(_status_key(project, user_id), {**known(project, user_id), **statuses}, STATUS_TTL_S)


def known(project: Project, user_id: int | None) -> dict[str, dict[str, Any]]:
    found = cache.get(_status_key(project, user_id))
    return found if isinstance(found, dict) else {}
