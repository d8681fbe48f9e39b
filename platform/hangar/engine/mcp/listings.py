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

from hangar.engine.mcp.servers import session_servers
from hangar.projects.models import Project

TTL_S = 7 * 24 * 3600
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def key(server: str, name: str) -> str:
    return f"{_UNSAFE.sub('_', server)}:{_UNSAFE.sub('_', name)}"


def _key(project: Project) -> str:
    return f"hangar:mcp-listings:{project.pk}:{project.created_at.timestamp():.6f}"


def record(project: Project, listings: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    """Replace the project's listings: `{server: {"prompts": [...], "resources": [...]}}` of the servers a
    run reached (one it did not reach lists nothing until it is reached again)."""
    cache.set(_key(project), listings, TTL_S)


def _current(project: Project) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The recorded listings of servers the project's config does not now leave out (disabled, or refused
    by the org's allow-list since the run that listed them)."""
    found = cache.get(_key(project))
    if not isinstance(found, dict):
        return {}
    left_out = session_servers(project.mcp, project.org.mcp_policy).left_out
    return {name: lists for name, lists in found.items() if name not in left_out}


def prompts(project: Project) -> dict[str, dict[str, Any]]:
    """`{key: {name, description, arguments, client}}`, sorted by key."""
    out = {
        key(server, p["name"]): {**p, "client": server}
        for server, lists in _current(project).items()
        for p in lists.get("prompts") or []
    }
    return dict(sorted(out.items()))


def resources(project: Project) -> dict[str, dict[str, Any]]:
    """OpenCode's `{key: McpResource}` (`name, uri, description?, mimeType?, client`), sorted by key."""
    out = {
        key(server, r["name"]): {**r, "client": server}
        for server, lists in _current(project).items()
        for r in lists.get("resources") or []
    }
    return dict(sorted(out.items()))
