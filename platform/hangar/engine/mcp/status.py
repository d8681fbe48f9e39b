"""Each project's MCP servers' last known status, as OpenCode's `/mcp` answers it (MCPStatus): written by
the worker whenever a run lists a server's tools, read by the protocol edge. In the cache (Redis), not the
database: it is a hint that the next run refreshes, and losing it only shows a server as not yet tried."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache

from hangar.projects.models import Project

TTL_S = 7 * 24 * 3600


def _key(project: Project) -> str:
    # The creation time too: a project id a restored or recreated database hands out again starts unknown.
    return f"hangar:mcp-status:{project.pk}:{project.created_at.timestamp():.6f}"


def record(project: Project, statuses: dict[str, dict[str, Any]]) -> None:
    if statuses:
        known = cache.get(_key(project)) or {}
        cache.set(_key(project), {**known, **statuses}, TTL_S)


def known(project: Project) -> dict[str, dict[str, Any]]:
    found = cache.get(_key(project))
    return found if isinstance(found, dict) else {}
