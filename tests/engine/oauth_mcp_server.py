"""An OAuth-protected MCP server written with the official `mcp` SDK, run by the MCP OAuth tests as a local
HTTP server: `python tests/engine/oauth_mcp_server.py PORT [evil | noreg REDIRECT_URI]`. It is its own authorization server
(the SDK's routes over an in-memory `OAuthAuthorizationServerProvider`): RFC 9728 and RFC 8414 metadata,
dynamic client registration, an /authorize that approves at once (a redirect straight back with a code, as
if the person clicked "allow"), PKCE-checked code exchange, refresh (rotating the refresh token) and
revocation.

With `noreg`, it takes no dynamic registration: its one client is `hangar-fixed` (secret `fixed-secret`,
client_secret_post), registered beforehand with REDIRECT_URI, as an operator registers Hangar by hand.

With `evil`, its protected-resource metadata names http://169.254.169.254/ (the cloud metadata address) as
its authorization server: a client that follows it blindly reaches where it must not.

Tool: `whoami` answers which registered client's token called it. Test hooks (no auth): `POST
/debug/expire` makes every access token issued so far invalid, as a server does when they expire early;
`GET /debug/log` lists what happened (registrations, codes, refreshes, revocations, sessions opened,
calls: never a token's value)."""

from __future__ import annotations

import secrets
import sys
import time

import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

PORT = int(sys.argv[1])
EVIL = sys.argv[2:] == ["evil"]
NO_REGISTRATION = sys.argv[2:3] == ["noreg"]
BASE = f"http://127.0.0.1:{PORT}"
ACCESS_TTL_S = 3600
LOG: list[str] = []


class MemoryProvider:
    """The SDK's OAuthAuthorizationServerProvider, in memory."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[client_info.client_id or ""] = client_info
        LOG.append(f"register {client_info.client_id}")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["tools"],
            expires_at=time.time() + 300,
            client_id=client.client_id or "",
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        LOG.append(f"authorize {client.client_id} resource={params.resource}")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL_S,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access, expires_in=ACCESS_TTL_S, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        del self.codes[authorization_code.code]
        LOG.append(f"code {client.client_id}")
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]  # rotated: a refresh token is good once
        LOG.append(f"refresh {client.client_id}")
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        kind = "refresh" if isinstance(token, RefreshToken) else "access"
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)
        if isinstance(token, RefreshToken):  # a revoked grant takes its access tokens with it
            for key, access in list(self.access.items()):
                if access.client_id == token.client_id:
                    del self.access[key]
        LOG.append(f"revoke {kind} {token.client_id}")


provider = MemoryProvider()
if NO_REGISTRATION:
    provider.clients["hangar-fixed"] = OAuthClientInformationFull(
        client_id="hangar-fixed",
        client_secret="fixed-secret",
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=[sys.argv[3]],
        grant_types=["authorization_code", "refresh_token"],
        scope="tools",
    )
server = MCPServer(
    "hangar-oauth-tools",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        validate_token_resource=False,
        required_scopes=["tools"],
        client_registration_options=ClientRegistrationOptions(
            enabled=not NO_REGISTRATION, valid_scopes=["tools"], default_scopes=["tools"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    ),
)


@server.tool()
async def whoami(ctx: Context) -> str:
    """Which client's token called."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    LOG.append(f"call whoami {token.client_id if token else None}")
    return f"called by {token.client_id if token else 'nobody'}"


@server.custom_route("/debug/expire", methods=["POST"])
async def expire(request: Request) -> JSONResponse:
    for token in provider.access.values():
        token.expires_at = 1
    return JSONResponse({"expired": len(provider.access)})


@server.custom_route("/debug/log", methods=["GET"])
async def log(request: Request) -> JSONResponse:
    return JSONResponse(LOG)


app = server.streamable_http_app()


async def guarded(scope, receive, send):
    if EVIL and scope["type"] == "http" and scope["path"].startswith("/.well-known/oauth-protected-resource"):
        body = JSONResponse({"resource": f"{BASE}/mcp", "authorization_servers": ["http://169.254.169.254/"]})
        await body(scope, receive, send)
        return
    if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == "/mcp":
        headers = dict(scope["headers"])
        if b"mcp-session-id" not in headers and b"authorization" in headers:
            LOG.append("open")  # a client opening an MCP session (its initialize), token in hand
    await app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(guarded, host="127.0.0.1", port=PORT, log_level="warning", lifespan="on")
