"""A local (stdio) MCP server: run inside the session's sandbox by the in-container agent
(sandbox/agent/mcpservers.py), which starts it on first use, restarts it when it has died, does the
initialize handshake, and stops it when idle; the container's stop at hibernate ends it too. It runs as the
sandbox user under the sandbox's limits and network policy, with the sandbox's env, the server's own
`environment`, and the project secrets an admin scoped to that server (the model can read those: they are in
a process of its sandbox).

The worker speaks JSON-RPC through the agent (`Sandbox.mcp_request`): one request, its response, and the
server's tools version (the agent counts its `notifications/tools/list_changed`: hangar.engine.mcp.changes)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hangar.engine.mcp.errors import McpError
from sandbox.protocol import Sandbox, SandboxError

_ids = itertools.count(1)


@dataclass(eq=False)
class LocalServer:
    name: str
    command: list[str]
    env: dict[str, str] = field(repr=False)  # may hold secrets scoped to this server: never printed
    timeout_s: float
    sandbox: Callable[[], Sandbox]
    # The agent's tools version of this server as its last answer gave it (the catalog compares it).
    tools_version: int = 0
    # What the server said it offers at initialize (None until an answer told): prompts, resources...
    capabilities: dict[str, Any] | None = None

    def request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """One request's result (McpError when it failed or the server answered an error)."""
        return self._request(method, params, min(timeout_s, self.timeout_s))

    def _request(self, method: str, params: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        message = {"jsonrpc": "2.0", "id": next(_ids), "method": method, "params": params}
        try:
            reply = self.sandbox().mcp_request(self.name, self.command, self.env, message, timeout_s)
        except SandboxError as exc:
            raise McpError(str(exc)) from None
        version = reply.get("toolsVersion")
        if isinstance(version, int):
            self.tools_version = version
        if isinstance(reply.get("capabilities"), dict):
            self.capabilities = reply["capabilities"]
        error = reply.get("error")
        if error is not None:
            message_text = error.get("message") if isinstance(error, dict) else str(error)
            raise McpError(f"the MCP server answered an error: {str(message_text)[:500]}")
        result = reply.get("result")
        if not isinstance(result, dict):
            raise McpError("the MCP server answered without a result")
        return result

    def list_tools(self) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(20):
            page = self._request(
                "tools/list", {"cursor": cursor} if cursor else {}, min(self.timeout_s, 30.0)
            )
            tools += [t for t in page.get("tools") or [] if isinstance(t, dict)]
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
        return tools

    def call_tool(self, tool: str, arguments: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
        # The agent bounds the wait; an abort meanwhile is noticed when the call returns (a local call's
        # timeout is the server's `timeout`, 120 s by default).
        return self._request("tools/call", {"name": tool, "arguments": arguments}, self.timeout_s)
