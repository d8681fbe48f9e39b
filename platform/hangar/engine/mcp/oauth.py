"""OAuth 2.1 for a project's remote MCP servers, the hosted way: each member authorizes a server for
themselves, and their runs call it with their tokens (hangar.engine.mcp.oauth_client). What OpenCode's
`/mcp/{name}/auth*` routes and the web app's MCP settings do:

- `oauth_start`: discovery and registration (hangar.engine.mcp.oauth_http), then the URL the member opens.
  The PKCE verifier, `state`, the client registration and who asked stay here, in the cache for PENDING_TTL_S,
  encrypted like the project's secrets and bound to (member, project, server); the member's browser only
  ever carries `state`.
- `oauth_finish`: the authorization server's redirect (`code`, `state`) exchanges the code once (a replayed
  or expired state is refused) and stores the member's grant; `oauth_finish_for_member` is OpenCode's
  `/auth/callback {code}`, finishing the member's own pending flow.
- `oauth_forget`: the grant deleted, its tokens revoked where the server offers revocation.
- `member_status`: OpenCode's MCPStatus of each server as this member sees it (needs_auth without a grant).

The redirect URI is Hangar's own callback (`/api/mcp/oauth/callback` under HANGAR_PUBLIC_URL) unless the
config's `oauth.redirectUri` names another; `oauth.callbackPort` means nothing hosted and is ignored."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.cache import cache

from hangar import mcp_config
from hangar.accounts.actors import Actor
from hangar.accounts.selectors import membership_for, user_active
from hangar.audit.models import ActorType
from hangar.engine.mcp import oauth_client
from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.servers import session_servers
from hangar.engine.mcp.services import ServerNotFound, mcp_status, server_check
from hangar.projects import crypto
from hangar.projects.mcp_env import env_for_mcp_headers
from hangar.projects.mcp_oauth_services import mcp_grant_exists, mcp_grant_forget, mcp_grant_store
from hangar.projects.models import Project

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull

PENDING_TTL_S = 600
CALLBACK_PATH = "/api/mcp/oauth/callback"
MAX_CODE = 2048


class OAuthUnsupported(Exception):
    """The server does not take OAuth here (a local server, or `oauth: false`): OpenCode's 400."""


class OAuthStateError(Exception):
    """The callback's state is unknown, expired, already used, or another member's."""


@dataclass(frozen=True)
class Pending:
    state: str
    org_id: int
    project_id: int
    user_id: int
    server: str
    document: dict[str, Any]


def callback_url() -> str:
    return f"{settings.PUBLIC_URL}{CALLBACK_PATH}"


def _pending_key(state: str) -> str:
    return f"hangar:mcp-oauth:pending:{state}"


def _member_key(project_id: int, user_id: int, server: str) -> str:
    return f"hangar:mcp-oauth:member:{project_id}:{user_id}:{server}"


def oauth_server(project: Project, name: str) -> dict[str, Any]:
    """The project's server `name`, usable now (the org's allow-list, enabled) and able to take OAuth."""
    server = (project.mcp or {}).get(name)
    if not isinstance(server, dict):
        raise ServerNotFound(name)
    if not oauth_client.uses_oauth(server):
        kind = "a local server" if server.get("type") == "local" else "configured with oauth: false"
        raise OAuthUnsupported(f"MCP server {name} does not support OAuth: it is {kind}.")
    servers = session_servers(project.mcp, project.org.mcp_policy)
    if name not in servers.usable:
        reason = servers.left_out.get(name, {})
        raise McpError(reason.get("error") or f"MCP server {name} is {reason.get('status', 'not usable')}.")
    return server


def _client_of(
    project: Project, name: str, config: dict[str, Any], redirect_uri: str
) -> OAuthClientInformationFull | None:
    """The client the config names (`oauth.clientId`, with its secret if any); None: register one. The
    secret may be `{env:NAME}`, filled (here only) from the project's vars and the secrets scoped to the
    server, as its headers are: the config itself is readable by every member."""
    # The SDK is imported on first use (a web process whose projects use no OAuth does not carry it).
    from mcp.shared.auth import OAuthClientInformationFull

    client_id = config.get("clientId")
    if not client_id:
        return None
    raw = str(config.get("clientSecret") or "")
    env = env_for_mcp_headers(project, name, set(mcp_config.ENV_REF.findall(raw)))
    secret = mcp_config.fill_headers({"secret": raw}, env)["secret"] or None
    return OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_post" if secret else "none",
        redirect_uris=[redirect_uri],  # type: ignore[list-item]  # pydantic parses the str as AnyUrl
    )


def oauth_start(*, actor: Actor, project: Project, name: str) -> dict[str, str]:
    """OpenCode's `{authorizationUrl, oauthState}` for the acting member."""
    # The SDK is imported on first use (a web process whose projects use no OAuth does not carry it).
    from hangar.engine.mcp import oauth_http

    if actor.user is None:
        raise OAuthUnsupported("Only a person can authorize an MCP server.")
    server = oauth_server(project, name)
    declared = server.get("oauth")
    config: dict[str, Any] = declared if isinstance(declared, dict) else {}
    redirect_uri = config.get("redirectUri") or callback_url()
    url = server["url"]
    configured = _client_of(project, name, config, redirect_uri)  # read here: the flow's loop has no ORM

    async def discover_and_register(http):  # type: ignore[no-untyped-def]
        found = await oauth_http.discover(http, url)
        scope = config.get("scope") or found.scope
        client = configured or await oauth_http.register(http, found, url, redirect_uri, scope)
        return found, client, scope

    try:
        found, client, scope = oauth_http.run(discover_and_register)
    except oauth_http.NeedsClientRegistration as exc:
        oauth_client.record(
            project, actor.user.pk, {name: {"status": "needs_client_registration", "error": str(exc)}}
        )
        raise
    if oauth_client.known(project, actor.user.pk).get(name, {}).get("status") == "needs_client_registration":
        oauth_client.record(project, actor.user.pk, {name: oauth_client.NEEDS_AUTH})  # a way was found now
    authorization_url, state, verifier = oauth_http.authorization_url(found, client, redirect_uri, scope)
    document = {
        "org": project.org_id,
        "project": project.pk,
        "user": actor.user.pk,
        "server": name,
        "url": url,
        "verifier": verifier,
        "redirect_uri": redirect_uri,
        "client": client.model_dump(mode="json", exclude_none=True),
        "token_endpoint": str(found.metadata.token_endpoint),
        "revocation_endpoint": str(found.metadata.revocation_endpoint or "") or None,
        "resource": found.resource,
        "issuer": str(found.metadata.issuer),
    }
    cache.set(_pending_key(state), crypto.encrypt(json.dumps(document)), PENDING_TTL_S)
    cache.set(_member_key(project.pk, actor.user.pk, name), state, PENDING_TTL_S)
    return {"authorizationUrl": authorization_url, "oauthState": state}


def pending_take(state: str, user_id: int | None) -> Pending:
    """The flow `state` started, taken once (a second taker, or one after PENDING_TTL_S, gets none).
    With `user_id` (a signed-in browser), it must be the member who started it."""
    if not state or len(state) > 200:
        raise OAuthStateError("This authorization was not started here or has expired; start again.")
    key = _pending_key(state)
    sealed = cache.get(key)
    if not isinstance(sealed, str) or not cache.delete(key):
        raise OAuthStateError("This authorization was not started here, has expired or was already used.")
    document = json.loads(crypto.decrypt(sealed))
    if user_id is not None and user_id != document["user"]:
        raise OAuthStateError("This authorization was started by someone else.")
    cache.delete(_member_key(document["project"], document["user"], document["server"]))
    return Pending(
        state, document["org"], document["project"], document["user"], document["server"], document
    )


def oauth_finish(*, actor: Actor, project: Project, pending: Pending, code: str) -> dict[str, Any]:
    """Exchange the code (PKCE), keep the member's grant, then list the server's tools with it: the
    member's MCPStatus. `project` is the pending flow's, read by the caller under the org's scope."""
    # The SDK is imported on first use (a web process whose projects use no OAuth does not carry it).
    from mcp.shared.auth import OAuthClientInformationFull

    from hangar.engine.mcp import oauth_http

    if project.pk != pending.project_id:
        raise OAuthStateError("This authorization belongs to another project.")
    if not code or len(code) > MAX_CODE:
        raise McpError("The authorization server sent no usable code.")
    document = pending.document
    server = oauth_server(project, pending.server)
    if server["url"] != document["url"]:
        raise McpError(f"MCP server {pending.server} moved to another URL meanwhile; start again.")
    client = OAuthClientInformationFull.model_validate(document["client"])
    tokens = oauth_http.run(
        lambda http: oauth_http.exchange_code(
            http,
            document["token_endpoint"],
            client,
            code=code,
            verifier=document["verifier"],
            redirect_uri=document["redirect_uri"],
            resource=document.get("resource"),
        )
    )
    grant = {
        **tokens,
        **{
            key: document[key]
            for key in ("client", "token_endpoint", "revocation_endpoint", "resource", "issuer")
        },
    }
    mcp_grant_store(
        actor=actor,
        project=project,
        user_id=pending.user_id,
        server=pending.server,
        url=document["url"],
        grant=grant,
    )
    return server_check(project, pending.server, server, member=pending.user_id)


def oauth_finish_for_member(*, actor: Actor, project: Project, name: str, code: str) -> dict[str, Any]:
    """OpenCode's `/auth/callback {code}`: the acting member's pending flow for the server, finished."""
    oauth_server(project, name)
    state = cache.get(_member_key(project.pk, actor.user_id or 0, name))
    pending = pending_take(state if isinstance(state, str) else "", actor.user_id)
    return oauth_finish(actor=actor, project=project, pending=pending, code=code)


def oauth_forget(*, actor: Actor, project: Project, name: str) -> bool:
    """Delete the acting member's grant and revoke its tokens (RFC 7009) where the server offers it."""
    # The SDK is imported on first use (a web process whose projects use no OAuth does not carry it).
    from mcp.shared.auth import OAuthClientInformationFull

    from hangar.engine.mcp import oauth_http

    server = (project.mcp or {}).get(name)
    if not isinstance(server, dict):
        raise ServerNotFound(name)
    user_id = actor.user_id
    if user_id is None:
        return True
    cache.delete(_member_key(project.pk, user_id, name))
    grant = mcp_grant_forget(actor=actor, project=project, user_id=user_id, server=name)
    oauth_client.record(project, user_id, {name: oauth_client.NEEDS_AUTH})
    if grant and grant.get("revocation_endpoint"):
        client = OAuthClientInformationFull.model_validate(grant["client"])
        tokens = [(grant[k], k) for k in ("refresh_token", "access_token") if grant.get(k)]
        try:
            oauth_http.run(lambda http: oauth_http.revoke(http, grant["revocation_endpoint"], client, tokens))
        except McpError:
            pass  # the grant is gone here whatever the server says; its tokens lapse at their expiry
    return True


def member_status(project: Project, user_id: int | None) -> dict[str, dict[str, Any]]:
    """Each server's MCPStatus for this member: the project's, except the servers that take OAuth, whose
    status is the member's own (needs_auth without a grant where the config declares `oauth`)."""
    statuses = mcp_status(project)
    servers = session_servers(project.mcp, project.org.mcp_policy).usable
    mine = oauth_client.known(project, user_id)
    for name, server in servers.items():
        if not oauth_client.uses_oauth(server):
            continue
        granted = user_id is not None and mcp_grant_exists(
            project_id=project.pk, user_id=user_id, server=name, url=server["url"]
        )
        if granted:
            statuses[name] = mine.get(name) or statuses[name]
        elif mine.get(name, {}).get("status") == "needs_client_registration":
            statuses[name] = mine[name]  # the member's last start found no way to register
        elif oauth_client.declares_oauth(server):
            statuses[name] = dict(oauth_client.NEEDS_AUTH)
    return statuses


def oauth_callback(*, state: str, code: str, error: str, signed_in: int | None) -> tuple[Project, str]:
    """The authorization server's redirect to Hangar's callback: the pending flow `state` names, finished
    for the member who started it (who must still be a member of the org; `signed_in`, the browser's
    user when it has a session, must be that member). Returns (the project, the server's name)."""
    pending = pending_take(state, signed_in)
    user = user_active(pending.user_id)
    membership = membership_for(user, pending.org_id) if user is not None else None
    project = (
        Project.objects.select_related("org").filter(pk=pending.project_id, org_id=pending.org_id).first()
    )
    if user is None or membership is None or project is None:
        raise OAuthStateError("This authorization's member or project is gone.")
    if error:
        raise McpError(f"The authorization server refused: {error[:100]}")
    actor = Actor(
        type=ActorType.USER, org_id=pending.org_id, user=user, membership=membership, label=user.email
    )
    oauth_finish(actor=actor, project=project, pending=pending, code=code)
    return project, pending.server
