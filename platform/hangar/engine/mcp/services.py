"""What OpenCode's `/mcp` routes do, for a Hangar project: each server's status, adding a server (to the
project's config, an admin's change, checked like the API's), connecting (enabling it, then listing its tools
now, from this process, through the same guard) and disconnecting (disabling it for the project's sessions).
OAuth, per member, is hangar.engine.mcp.oauth."""

from __future__ import annotations

from typing import Any

from hangar.accounts.actors import Actor
from hangar.engine.mcp import oauth_client, status
from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.servers import session_servers
from hangar.engine.mcp.tools import remote_client
from hangar.projects.models import Project
from hangar.projects.services import project_update

NOT_TRIED = {"status": "failed", "error": "Not connected yet: a session's first step connects it."}


class ServerNotFound(Exception):
    def __init__(self, name: str):
        super().__init__(f"MCP server not found: {name}")
        self.name = name


def mcp_status(project: Project) -> dict[str, dict[str, Any]]:
    """OpenCode's MCPStatus of each of the project's servers: disabled or refused by the org as configured
    now, else as the last run (or connect) found it."""
    servers = session_servers(project.mcp, project.org.mcp_policy)
    known = status.known(project)
    out = dict(servers.left_out)
    for name in servers.usable:
        out[name] = known.get(name) or NOT_TRIED
    return dict(sorted(out.items()))


def mcp_server_add(*, actor: Actor, project: Project, name: str, config: Any) -> dict[str, dict[str, Any]]:
    """Add or replace one server of the project (admins; a 400 names the bad field)."""
    updated = project_update(actor=actor, project=project, mcp={**(project.mcp or {}), name: config})
    return mcp_status(updated)


def _configured(project: Project, name: str) -> dict[str, Any]:
    server = (project.mcp or {}).get(name)
    if not isinstance(server, dict):
        raise ServerNotFound(name)
    return server


def mcp_server_connect(*, actor: Actor, project: Project, name: str) -> bool:
    """Enable the server for the project's sessions (an admin's change when it was disabled), then list its
    tools now: True when it answered."""
    server = _configured(project, name)
    if server.get("enabled") is False:
        project = project_update(
            actor=actor, project=project, mcp={**project.mcp, name: {**server, "enabled": True}}
        )
    usable = session_servers(project.mcp, project.org.mcp_policy)
    if name not in usable.usable:
        status.record(project, {name: usable.left_out[name]})
        return False
    if server["type"] != "remote":
        return False
    return server_check(project, name, server, member=actor.user_id) == {"status": "connected"}


def server_check(
    project: Project, name: str, server: dict[str, Any], *, member: int | None
) -> dict[str, Any]:
    """List a remote server's tools now (this process, through the guard; an OAuth server with the member's
    tokens) and record what was found: the member's own status for an OAuth server, else the project's."""
    client = remote_client(project, name, server, member=member)
    try:
        client.list_tools()
        found: dict[str, Any] = {"status": "connected"}
    except oauth_client.NeedsAuth:
        found = dict(oauth_client.NEEDS_AUTH)
    except McpError as exc:
        found = oauth_client.failure_status(server, exc)
    if isinstance(client, oauth_client.OAuthRemoteServer):
        oauth_client.record(project, member, {name: found})
    else:
        status.record(project, {name: found})
    return found


def mcp_server_disconnect(*, actor: Actor, project: Project, name: str) -> bool:
    """Disable the server for the project's sessions (admins): its tools are offered from their next run."""
    server = _configured(project, name)
    if server.get("enabled") is not False:
        project_update(actor=actor, project=project, mcp={**project.mcp, name: {**server, "enabled": False}})
    return True


def mcp_server_exists(project: Project, name: str) -> None:
    _configured(project, name)
