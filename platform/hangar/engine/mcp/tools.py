"""MCP servers' tools as tools of the loop: `<server>_<tool>` with the server's JSON schema (OpenCode's
naming), asking the permission engine under that name with the pattern `*` like OpenCode's MCP tools (so
`{"permission": "github_*", "action": "deny"}` in the org's policy stops a whole server, and the loop does
not even offer its tools), bounded like a built-in tool's output (tools.execute), metered (latency, bytes
in the part's metadata) and audited (server, tool, who; never the arguments).

A run lists each server's tools at its first step (`McpCatalog`), and again at a later step only for a server
that said its tools changed (hangar.engine.mcp.changes); a server that cannot be reached offers nothing and
shows as failed in `/mcp`, and the run goes on without it."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from hangar import mcp_config
from hangar.conversations.models import Session
from hangar.conversations.run_audit_services import mcp_call_audit
from hangar.engine.mcp import changes, content, listings, oauth_client, status
from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.local import LocalServer
from hangar.engine.mcp.servers import session_servers
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.projects.env import secrets_for_mcp
from hangar.projects.mcp_env import env_for_mcp_headers
from hangar.projects.models import Project
from sandbox.protocol import Sandbox

MAX_TOOLS_PER_SERVER = 100
MAX_SCHEMA_BYTES = 32 * 1024
MAX_DESCRIPTION = 4096
MAX_NAME = 64  # what model APIs take for a function name
LIST_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 120.0


class McpArgs(BaseModel):
    """Any JSON object: the server checks its own arguments against the schema it published."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}_{tool}")[:MAX_NAME]


def _schema(raw: Any) -> dict[str, Any] | None:
    schema = dict(raw) if isinstance(raw, dict) else {}
    schema["type"] = "object"
    if not isinstance(schema.get("properties"), dict):
        schema["properties"] = {}
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        return None
    return schema


def render(result: dict[str, Any]) -> str:
    """A CallToolResult's content as text for the model (OpenCode joins the text items)."""
    out = []
    for item in result.get("content") or []:
        kind = item.get("type")
        if kind == "text":
            out.append(str(item.get("text", "")))
        elif kind == "resource":
            resource = item.get("resource") or {}
            out.append(str(resource.get("text") or f"[resource {resource.get('uri', '')}]"))
        elif kind == "resource_link":
            out.append(f"[resource {item.get('uri', '')}]")
        else:
            out.append(f"[{kind} content: {item.get('mimeType', 'unknown type')}]")
    if not out and result.get("structuredContent") is not None:
        out.append(json.dumps(result["structuredContent"]))
    return "\n".join(out)


@dataclass(eq=False)
class RemoteServer:
    name: str
    url: str
    headers: dict[str, str] = field(repr=False)  # secrets filled in: never printed, stored or sent elsewhere
    timeout_s: float
    scope: str  # the project: its calls share a held session, no one else's do (hangar.engine.mcp.held)

    # The mcp SDK's client is imported on first use: a worker whose orgs use no remote server does not
    # carry it (its RSS is 20 MB higher with it).
    def list_tools(self) -> list[dict[str, Any]]:
        from hangar.engine.mcp import remote

        server = remote.Server(self.scope, self.name, self.url, self.headers, self.timeout_s)
        return remote.list_tools(server, LIST_TIMEOUT_S)

    def call_tool(self, tool: str, arguments: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        from hangar.engine.mcp import remote

        server = remote.Server(self.scope, self.name, self.url, self.headers, self.timeout_s)
        return remote.call_tool(server, tool, arguments, abort)


@dataclass(eq=False)
class McpTool:
    """One server tool (the registry's `Tool` protocol); `function_schema` is what the model is sent."""

    name: str
    description: str
    function_schema: dict[str, Any]
    server: RemoteServer | LocalServer | oauth_client.OAuthRemoteServer
    remote_name: str
    session: Session
    parameters: type[BaseModel] = McpArgs

    def execute(self, args: McpArgs, ctx: ToolContext) -> ToolResult:
        ctx.ask(self.name, ["*"], ["*"], {})
        arguments = args.model_dump()
        started = time.monotonic()
        try:
            result = self.server.call_tool(self.remote_name, arguments, ctx.abort)
        except McpError as exc:
            self._audit(started, 0, ok=False)
            raise ToolError(f"MCP server {self.server.name}: {exc}") from None
        output = render(result)
        size = len(output.encode())
        ms = self._audit(started, size, ok=not result.get("isError"))
        if result.get("isError"):
            raise ToolError(output or f"The {self.name} tool failed.")
        metadata = {"mcp": {"server": self.server.name, "tool": self.remote_name, "bytes": size, "ms": ms}}
        return ToolResult(title="", output=output, metadata=metadata)

    def _audit(self, started: float, size: int, *, ok: bool) -> int:
        """Audit the call (server, tool, who; never its arguments); its latency in ms, for the part too."""
        ms = round((time.monotonic() - started) * 1000)
        mcp_call_audit(
            session=self.session,
            server=self.server.name,
            tool=self.remote_name,
            data={"ms": ms, "bytes": size, "ok": ok},
        )
        return ms


def remote_client(
    project: Project, name: str, server: dict[str, Any], *, secrets: bool = True, member: int | None = None
) -> RemoteServer | oauth_client.OAuthRemoteServer:
    """A remote server's client, its headers' `{env:NAME}` filled in (here, in the worker, only); without
    `secrets` from sandbox-safe vars only (a workspace's server). A project's server that may take OAuth
    is called with `member`'s tokens when it declares `oauth` or the member authorized it
    (hangar.engine.mcp.oauth_client)."""
    timeout = server.get("timeout")
    headers = server.get("headers") or {}
    env = env_for_mcp_headers(project, name, mcp_config.env_refs(server), secrets=secrets)
    filled = mcp_config.fill_headers(headers, env)
    timeout_s = timeout / 1000 if timeout else CALL_TIMEOUT_S
    if secrets and oauth_client.with_member_tokens(project.pk, name, server, member):
        declared = oauth_client.declares_oauth(server)
        return oauth_client.OAuthRemoteServer(
            name, server["url"], filled, timeout_s, project.pk, member, declared
        )
    return RemoteServer(
        name=name, url=server["url"], headers=filled, timeout_s=timeout_s, scope=str(project.pk)
    )


def local_client(
    project: Project,
    name: str,
    server: dict[str, Any],
    sandbox: Callable[[], Sandbox],
    *,
    secrets: bool = True,
) -> LocalServer:
    """A local server's client: its environment, and the project secrets an admin scoped to it (a project's
    server only; never a workspace's)."""
    timeout = server.get("timeout")
    env = {**(server.get("environment") or {}), **(secrets_for_mcp(project, name) if secrets else {})}
    return LocalServer(
        name=name,
        command=list(server["command"]),
        env=env,
        timeout_s=timeout / 1000 if timeout else CALL_TIMEOUT_S,
        sandbox=sandbox,
    )


def _tools_of(
    session: Session,
    client: RemoteServer | LocalServer | oauth_client.OAuthRemoteServer,
    listed: list[dict[str, Any]],
    taken: set[str],
) -> dict[str, McpTool]:
    tools: dict[str, McpTool] = {}
    for item in listed[:MAX_TOOLS_PER_SERVER]:
        remote_name = str(item.get("name", ""))
        name = tool_name(client.name, remote_name)
        schema = _schema(item.get("inputSchema"))
        if not remote_name or schema is None or name in taken or name in tools:
            continue
        description = str(item.get("description") or "")[:MAX_DESCRIPTION]
        function = {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }
        tools[name] = McpTool(name, description, function, client, remote_name, session)
    return tools


Client = RemoteServer | LocalServer | oauth_client.OAuthRemoteServer


def tools_version(client: Client) -> int:
    """The server's tools version as this process last heard it (hangar.engine.mcp.changes)."""
    if isinstance(client, LocalServer):
        return client.tools_version
    scope = client.scope if isinstance(client, RemoteServer) else client.session_scope
    return changes.version(scope, client.name)


class McpCatalog:
    """A run's MCP servers: their clients, built at its first step; their tools, listed then and listed
    again at a later step only for a server whose tools version moved (it sent tools/list_changed); their
    prompts and resources, listed at the first step for /command and /experimental/resource
    (hangar.engine.mcp.listings)."""

    def __init__(self, sandbox: Callable[[], Sandbox] | None = None) -> None:
        self._clients: dict[str, Client] | None = None
        # server -> (the tools version its tools were listed at, the tools as listed)
        self._listed: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        self._tools: dict[str, McpTool] | None = None
        self._servers: dict[str, dict[str, Any]] = {}  # the usable servers' config
        self._left_out: dict[str, dict[str, Any]] = {}
        self._from_workspace: frozenset[str] = frozenset()
        self._sandbox = sandbox  # the run's sandbox, attached on first use (local servers run in it)
        self.generation = 0  # moves whenever the tools are listed anew (the planner's offer compares it)

    def clients(self, session: Session, workspace: Callable[[], Any] = lambda: None) -> dict[str, Client]:
        """The usable servers' clients. `workspace()` reads the workspace's opencode.json `mcp` key: only
        when the org allows any server, since an empty allow-list lets none of them through."""
        if self._clients is None:
            policy = session.org.mcp_policy or {}
            allows = any(policy.get(kind) for kind in ("local", "remote"))
            self._clients = self._build(session, workspace() if allows else None)
        return self._clients

    def tools(
        self, session: Session, builtin: set[str], workspace: Callable[[], Any] = lambda: None
    ) -> dict[str, McpTool]:
        clients = self.clients(session, workspace)
        if self._tools is None:
            self._list(session, clients)
        else:
            moved = [n for n, (seen, _) in self._listed.items() if tools_version(clients[n]) != seen]
            if not moved:
                return self._tools
            for name in moved:
                try:
                    self._listed[name] = _listing(clients[name])
                except McpError:  # the old list stays, and is not asked for again until the next change
                    self._listed[name] = (tools_version(clients[name]), self._listed[name][1])
        tools: dict[str, McpTool] = {}
        for name, (_, listed) in self._listed.items():
            tools.update(_tools_of(session, clients[name], listed, builtin | set(tools)))
        self._tools = tools
        self.generation += 1
        return tools

    def _build(self, session: Session, workspace_mcp: Any) -> dict[str, Client]:
        servers = session_servers(session.project.mcp, session.org.mcp_policy, workspace_mcp)
        self._servers, self._left_out = servers.usable, dict(servers.left_out)
        self._from_workspace = servers.from_workspace
        person = session.prompter_id or session.creator_id
        clients: dict[str, Client] = {}
        for name, server in servers.usable.items():
            secrets = name not in servers.from_workspace
            if server["type"] == "remote":
                clients[name] = remote_client(session.project, name, server, secrets=secrets, member=person)
            elif self._sandbox is not None:
                clients[name] = local_client(session.project, name, server, self._sandbox, secrets=secrets)
        return clients

    def _list(self, session: Session, clients: dict[str, Client]) -> None:
        statuses = dict(self._left_out)
        member_statuses: dict[str, dict[str, Any]] = {}  # the OAuth servers': the run's member's own
        contents: dict[str, dict[str, Any]] = {}
        member_contents: dict[str, dict[str, Any]] = {}  # listed with the member's token: theirs only
        for name, client in clients.items():
            oauth = isinstance(client, oauth_client.OAuthRemoteServer)
            found = member_statuses if oauth else statuses
            try:
                self._listed[name] = _listing(client)
            except oauth_client.NeedsAuth:
                found[name] = oauth_client.NEEDS_AUTH
                continue
            except McpError as exc:
                found[name] = oauth_client.failure_status(self._servers[name], exc)
                continue
            found[name] = {"status": "connected"}
            listed = {**_contents(client), "workspace": name in self._from_workspace}
            (member_contents if oauth else contents)[name] = listed
        person = session.prompter_id or session.creator_id
        status.record(session.project, statuses)
        oauth_client.record(session.project, person, member_statuses)
        if statuses or member_statuses:  # a project with no MCP server at all pays no cache write
            listings.record(session.project, contents, member=person, member_listings=member_contents)


def _listing(client: Client) -> tuple[int, list[dict[str, Any]]]:
    """The server's tools and the tools version they are as of: a remote server's as the list began (a
    change told meanwhile lists again), a local one's as its answer carries it (the agent reads what the
    server said before answering, and a new run's client knows no version before its first answer)."""
    before = tools_version(client)
    listed = client.list_tools()
    return (client.tools_version if isinstance(client, LocalServer) else before), listed


def _contents(client: Client) -> dict[str, Any]:
    """The server's prompts and resources (none when it fails to list them: its tools still work)."""
    out: dict[str, Any] = {}
    for kind, lister in (("prompts", content.list_prompts), ("resources", content.list_resources)):
        try:
            out[kind] = lister(client)
        except McpError:
            out[kind] = []
    return out
