"""Each project's MCP prompts and resources as its runs last listed them, for what OpenCode's `/command`
and `/experimental/resource` answer (hangar.opencode.views_meta). Written by the worker when a run lists its
servers (hangar.engine.mcp.tools.McpCatalog), so the web process never calls a server to answer a listing;
in the cache (Redis) like the servers' status (hangar.engine.mcp.status): a hint the next run refreshes.

Keys are OpenCode's: `<server>:<name>` with every character outside `[A-Za-z0-9_-]` of either made `_`
(its fetchPromptsForClient and fetchResourcesForClient)."""

from __future__ import annotations

import re
from typing import Any

from django.core.cache import cache

from hangar.engine.agents.secret_env import masker_for
from hangar.engine.mcp.servers import session_servers
from hangar.projects.models import Project

TTL_S = 7 * 24 * 3600
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def key(server: str, name: str) -> str:
    return f"{_UNSAFE.sub('_', server)}:{_UNSAFE.sub('_', name)}"


def _key(project: Project, member: int | None = None) -> str:
    # A member's own listings (servers called with their OAuth token) under a key of their own.
    mine = "" if member is None else f":member:{member}"
    return f"hangar:mcp-listings:{project.pk}:{project.created_at.timestamp():.6f}{mine}"


def record(
    project: Project,
    listings: dict[str, dict[str, Any]],
    *,
    member: int | None = None,
    member_listings: dict[str, dict[str, Any]] | None = None,
) -> None:
    """Replace the project's listings: `{server: {"prompts": [...], "resources": [...], "workspace": bool}}`
    of the servers a run reached (one it did not reach lists nothing until it is reached again); those of
    servers called with the run's member's OAuth token are that member's only."""
    cache.set(_key(project), listings, TTL_S)
    if member is not None and (member_listings or cache.get(_key(project, member))):
        cache.set(_key(project, member), member_listings or {}, TTL_S)


def _current(project: Project, member: int | None) -> dict[str, dict[str, Any]]:
    """The recorded listings (the project's, then the member's own) of servers still configured (a
    project's server still in its config, or a workspace's as its last run saw it) and not now left out
    (disabled, or refused by the org's allow-list since), with the project's secrets masked like anything
    else it shows."""
    shared = cache.get(_key(project))
    own = cache.get(_key(project, member)) if member is not None else None
    found = {
        **(shared if isinstance(shared, dict) else {}),
        **(own if isinstance(own, dict) else {}),
    }
    if not found:
        return {}
    configured = project.mcp if isinstance(project.mcp, dict) else {}
    left_out = session_servers(project.mcp, project.org.mcp_policy).left_out
    kept = {
        name: lists
        for name, lists in found.items()
        if name not in left_out and (name in configured or lists.get("workspace"))
    }
    masked: dict[str, dict[str, Any]] = masker_for(project).data(kept)
    return masked


def prompts(project: Project, member: int | None = None) -> dict[str, dict[str, Any]]:
    """`{key: {name, description, arguments, client}}` as `member` may see them, sorted by key."""
    out = {
        key(server, p["name"]): {**p, "client": server}
        for server, lists in _current(project, member).items()
        for p in lists.get("prompts") or []
    }
    return dict(sorted(out.items()))


def resources(project: Project, member: int | None = None) -> dict[str, dict[str, Any]]:
    """OpenCode's `{key: McpResource}` (`name, uri, description?, mimeType?, client`) as `member` may see
    them, sorted by key."""
    out = {
        key(server, r["name"]): {**r, "client": server}
        for server, lists in _current(project, member).items()
        for r in lists.get("resources") or []
    }
    return dict(sorted(out.items()))
