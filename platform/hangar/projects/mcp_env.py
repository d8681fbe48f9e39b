"""The project env vars a remote MCP server's headers name (`{env:NAME}`, hangar.mcp_config), for the worker's
HTTP request to that server only: the sandbox-safe ones, and the secrets whose scope names that server
(`ProjectEnvVar.scope_mcp`). A secret scoped elsewhere fills nothing. None of them reaches a sandbox, an event
or a log from here."""

from hangar.projects.env import env_for_sandbox, secrets_for_mcp
from hangar.projects.models import Project


def env_for_mcp_headers(
    project: Project, server: str, names: set[str], *, secrets: bool = True
) -> dict[str, str]:
    """The values of the vars called `names` that server `server` may have; others are absent. Without
    `secrets` (a server the workspace, not the project, configured) only the sandbox-safe ones."""
    if not names:
        return {}
    plain = {name: value for name, value in env_for_sandbox(project).items() if name in names}
    if not secrets:
        return plain
    scoped = {name: value for name, value in secrets_for_mcp(project, server).items() if name in names}
    return {**plain, **scoped}
