"""The HTTP exchanges of OAuth 2.1 for a remote MCP server, from the platform (never a sandbox): RFC 9728
protected-resource metadata, then RFC 8414 authorization-server metadata, RFC 7591 dynamic client
registration, the authorization code's exchange (PKCE S256), refresh and RFC 7009 revocation.

The official SDK's pieces do the protocol (`mcp.client.auth`: its discovery URL lists, response parsers,
registration request and checks, PKCE, the token request's client authentication); its
`OAuthClientProvider` is not used whole, since it runs the flow inside one HTTP request and waits for a
browser there, while here the flow is split across two requests of a person (start, then the redirect's
callback), possibly in two processes. Every URL, the metadata's included, goes through the MCP guard
(hangar.engine.mcp.guard), so metadata cannot send the platform to its own network or the metadata
address; redirects are not followed and bodies are bounded."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError, PKCEParameters
from mcp.client.auth import utils as sdk
from mcp.client.auth.oauth2 import OAuthContext, check_registration_usable
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthMetadata, OAuthToken
from mcp.shared.auth_utils import calculate_token_expiry, check_resource_allowed, resource_url_from_server_url
from pydantic import ValidationError

from hangar.engine.mcp import guard
from hangar.engine.mcp.errors import McpError

TIMEOUT_S = 10.0
MAX_BODY_BYTES = 256 * 1024  # metadata, a registration, a token answer: small documents
T = TypeVar("T")


class OAuthError(McpError):
    """The flow cannot go on; the message is safe to show (it never holds a token or a secret)."""


class NeedsClientRegistration(OAuthError):
    """The authorization server takes no dynamic registration and the config names no `oauth.clientId`."""


@dataclass(frozen=True)
class Discovery:
    """What the server and its authorization server published."""

    metadata: OAuthMetadata
    resource: str | None  # RFC 8707: sent when the server published protected-resource metadata
    scope: str | None  # the scope to ask for, when the config names none


def run(work: Callable[[httpx2.AsyncClient], Awaitable[T]]) -> T:
    """`work` with a guarded client, on an event loop of its own (callers are sync: a view, a worker
    thread); any failure below becomes an OAuthError naming the step that failed, without secrets."""

    async def main() -> T:
        transport = guard.GuardedTransport(MAX_BODY_BYTES)
        async with httpx2.AsyncClient(
            transport=transport, timeout=httpx2.Timeout(TIMEOUT_S), trust_env=False, follow_redirects=False
        ) as client:
            return await work(client)

    try:
        return asyncio.run(main())
    except OAuthError:
        raise
    except (OAuthFlowError, OAuthRegistrationError, OAuthTokenError) as exc:
        raise OAuthError(str(exc).splitlines()[0][:300]) from None
    except guard.Refused as exc:
        raise OAuthError(str(exc)) from None
    except (httpx2.HTTPError, OSError, ValidationError, ValueError) as exc:
        raise OAuthError(f"the OAuth exchange failed: {type(exc).__name__}") from None


async def _get_json_doc(client: httpx2.AsyncClient, url: str) -> httpx2.Response:
    return await client.send(sdk.create_oauth_metadata_request(url))


async def discover(client: httpx2.AsyncClient, server_url: str) -> Discovery:
    """The authorization server's metadata for the MCP server at `server_url`: its 401's
    `resource_metadata` hint, the RFC 9728 well-known URLs, then RFC 8414 (and OIDC) discovery."""
    probe = await client.post(
        server_url,
        json={"jsonrpc": "2.0", "id": 0, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream"},
    )
    hint = sdk.extract_resource_metadata_from_www_auth(probe) if probe.status_code == 401 else None
    challenged = sdk.extract_scope_from_www_auth(probe) if probe.status_code == 401 else None
    prm = None
    for url in sdk.build_protected_resource_metadata_discovery_urls(hint, server_url):
        prm = await sdk.handle_protected_resource_response(await _get_json_doc(client, url))
        if prm is not None:
            break
    auth_server = None
    resource = None
    if prm is not None:
        expected = resource_url_from_server_url(server_url)
        if not check_resource_allowed(requested_resource=expected, configured_resource=str(prm.resource)):
            raise OAuthError(f"the server's metadata names another resource ({prm.resource})")
        auth_server = str(prm.authorization_servers[0])
        resource = str(prm.resource)
    metadata = None
    for url in sdk.build_oauth_authorization_server_metadata_discovery_urls(auth_server, server_url):
        ok, found = await sdk.handle_auth_metadata_response(await _get_json_doc(client, url))
        if found is not None:
            metadata = found
            break
        if not ok:
            break
    if metadata is None:
        raise OAuthError("the server publishes no OAuth authorization server metadata")
    if auth_server is not None and not sdk.issuers_match(str(metadata.issuer), auth_server):
        raise OAuthError(f"the authorization server's metadata names another issuer ({metadata.issuer})")
    scope = sdk.get_client_metadata_scopes(challenged, prm, metadata, ["authorization_code", "refresh_token"])
    return Discovery(metadata=metadata, resource=resource, scope=scope)


async def register(
    client: httpx2.AsyncClient, discovery: Discovery, server_url: str, redirect_uri: str, scope: str | None
) -> OAuthClientInformationFull:
    """RFC 7591 dynamic registration of Hangar as a client (a confidential web client when the server
    issues a secret), checked usable by the SDK's rule."""
    if discovery.metadata.registration_endpoint is None:
        raise NeedsClientRegistration(
            "the server offers no dynamic client registration: register Hangar with it and set oauth.clientId"
            " (and oauth.clientSecret, best as {env:NAME} naming a project secret scoped to the server)"
        )
    request = sdk.create_client_registration_request(
        discovery.metadata,
        OAuthClientMetadata(
            redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses the str as AnyUrl
            client_name="Hangar",
            scope=scope,
            grant_types=["authorization_code", "refresh_token"],
            application_type="web",
        ),
        server_url,
    )
    info = await sdk.handle_registration_response(await client.send(request))
    check_registration_usable(info)
    return info


def authorization_url(
    discovery: Discovery, client: OAuthClientInformationFull, redirect_uri: str, scope: str | None
) -> tuple[str, str, str]:
    """(the URL a person opens, its `state`, the PKCE verifier kept server-side)."""
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    params = {
        "response_type": "code",
        "client_id": client.client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
    }
    if discovery.resource:
        params["resource"] = discovery.resource
    if scope:
        params["scope"] = scope
    endpoint = str(discovery.metadata.authorization_endpoint)
    joiner = "&" if "?" in endpoint else "?"
    return f"{endpoint}{joiner}{urlencode(params)}", state, pkce.code_verifier


def _authenticated(
    client: OAuthClientInformationFull, data: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """The token or revocation request's client authentication, as the SDK does it (basic, post, none)."""
    context = OAuthContext(
        server_url="",
        client_metadata=OAuthClientMetadata(redirect_uris=None),
        storage=None,  # type: ignore[arg-type]  # only its client authentication is used
        redirect_handler=None,
        callback_handler=None,
        client_info=client,
    )
    return context.prepare_token_auth(data, {"Content-Type": "application/x-www-form-urlencoded"})


async def _token_request(
    http: httpx2.AsyncClient, endpoint: str, client: OAuthClientInformationFull, data: dict[str, str]
) -> dict[str, Any]:
    body, headers = _authenticated(client, {**data, "client_id": client.client_id})
    response = await http.post(endpoint, data=body, headers=headers)
    if response.status_code not in (200, 201):
        raise OAuthTokenError(f"the token endpoint answered HTTP {response.status_code}")
    token: OAuthToken = await sdk.handle_token_response_scopes(response)
    expiry = calculate_token_expiry(token.expires_in)
    return {
        "access_token": token.access_token,
        "refresh_token": token.refresh_token,
        "scope": token.scope,
        "expires_at": expiry,
    }


async def exchange_code(
    http: httpx2.AsyncClient,
    endpoint: str,
    client: OAuthClientInformationFull,
    *,
    code: str,
    verifier: str,
    redirect_uri: str,
    resource: str | None,
) -> dict[str, Any]:
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    if resource:
        data["resource"] = resource
    return await _token_request(http, endpoint, client, data)


async def refresh(
    http: httpx2.AsyncClient,
    endpoint: str,
    client: OAuthClientInformationFull,
    refresh_token: str,
    resource: str | None,
) -> dict[str, Any] | None:
    """New tokens, or None when the server refuses the refresh token (4xx: the grant is gone)."""
    data = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    if resource:
        data["resource"] = resource
    body, headers = _authenticated(client, {**data, "client_id": client.client_id})
    response = await http.post(endpoint, data=body, headers=headers)
    if 400 <= response.status_code < 500:
        return None
    if response.status_code != 200:
        raise OAuthTokenError(f"the token endpoint answered HTTP {response.status_code}")
    token = await sdk.handle_token_response_scopes(response)
    return {
        "access_token": token.access_token,
        # RFC 6749 §6: a server that does not rotate omits it; the old one stays good.
        "refresh_token": token.refresh_token or refresh_token,
        "scope": token.scope,
        "expires_at": calculate_token_expiry(token.expires_in),
    }


async def revoke(
    http: httpx2.AsyncClient, endpoint: str, client: OAuthClientInformationFull, tokens: list[tuple[str, str]]
) -> None:
    """RFC 7009: each (token, hint) revoked; the server's answer is not a reason to keep the grant."""
    for token, hint in tokens:
        body, headers = _authenticated(
            client, {"token": token, "token_type_hint": hint, "client_id": client.client_id}
        )
        await http.post(endpoint, data=body, headers=headers)
