"""Which MCP servers a session's step gets, and why the others are left out.

The project's servers (`Project.mcp`, set by its admins) and the workspace's `opencode.json` `mcp` key
(anyone who can push to the repository): the project's win a name both use, and only the project's get
project secrets in their headers. Either kind must pass the org's
allow-list (`Org.mcp_policy`) now, not only when saved: the org may have narrowed it since. A server with
`enabled: false` is offered nothing and shows as disabled."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hangar import mcp_config


@dataclass(frozen=True)
class Servers:
    usable: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The usable ones the workspace named (not the project): they get no project secret, since anyone who
    # can push to the repository writes opencode.json.
    from_workspace: frozenset[str] = frozenset()
    # name -> OpenCode's MCPStatus for the ones not usable ({"status": "disabled"} or failed with why)
    left_out: dict[str, dict[str, Any]] = field(default_factory=dict)


def workspace_servers(config: Any) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The `mcp` key of a workspace's opencode.json, each server checked on its own: (good, failed)."""
    good: dict[str, dict[str, Any]] = {}
    failed: dict[str, dict[str, Any]] = {}
    if not isinstance(config, dict):
        return good, failed
    for name, server in list(config.items())[: mcp_config.MAX_SERVERS]:
        try:
            good[name] = mcp_config.clean_server(name, server, "opencode.json mcp")
        except mcp_config.McpConfigError as exc:
            if isinstance(name, str) and mcp_config.NAME.match(name):
                failed[name] = {"status": "failed", "error": str(exc)}
    return good, failed


def session_servers(project_mcp: Any, org_policy: Any, workspace_mcp: Any = None) -> Servers:
    """The servers a step offers tools of, and the status of the others."""
    usable: dict[str, dict[str, Any]] = {}
    workspace, left_out = workspace_servers(workspace_mcp)
    configured = {**workspace, **(project_mcp if isinstance(project_mcp, dict) else {})}
    for name, server in configured.items():
        if server.get("enabled") is False:
            left_out[name] = {"status": "disabled"}
            continue
        reason = mcp_config.refusal(server, org_policy if isinstance(org_policy, dict) else {})
        if reason:
            left_out[name] = {"status": "failed", "error": reason}
            continue
        left_out.pop(name, None)
        usable[name] = server
    project = project_mcp if isinstance(project_mcp, dict) else {}
    return Servers(
        usable=usable,
        left_out=left_out,
        from_workspace=frozenset(name for name in usable if name not in project),
    )
