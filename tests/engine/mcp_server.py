"""A small MCP server written with the official `mcp` SDK, run by the MCP tests as a local HTTP server
(Streamable HTTP; SSE with a third argument `sse`): `python tests/engine/mcp_server.py PORT TOKEN [sse]`. Every request must carry
`Authorization: Bearer TOKEN` (a 401 otherwise), so a test can tell that the project's secret reached it.

Tools: `add` (a result), `huge` (a result far over the output bound), `slow` (sleeps), `crash` (the
process dies mid-call), `fail` (an isError result), `grow` (adds the tool `grown` and says so with
`notifications/tools/list_changed`, on the call's own stream so it reaches the client before the result).
Prompt: `review` (arguments `topic`, required, and `tone`). Resource: `notes://readme` (text). Each session a client opens (a POST with no
`mcp-session-id`: its `initialize`) adds a line to `hangar-mcp-PORT.opens` in the temp directory, so a test
can count the Streamable HTTP sessions a client opened."""

from __future__ import annotations

import os
import sys
import tempfile

import anyio
import mcp_types as types
import uvicorn
from mcp.server.mcpserver import Context, MCPServer

PORT, TOKEN = int(sys.argv[1]), sys.argv[2]
OPENS = os.path.join(tempfile.gettempdir(), f"hangar-mcp-{PORT}.opens")
server = MCPServer("hangar-test-tools")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"sum is {a + b}"


@server.tool()
def huge(lines: int = 40000) -> str:
    """A result of many lines."""
    return "\n".join(f"line {i} of a huge MCP result" for i in range(lines))


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def crash() -> str:
    """The server process dies while answering."""
    os._exit(3)


@server.tool()
def fail() -> str:
    """An error the model should see."""
    raise ValueError("the fail tool always fails")


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `grown` to this server."""

    def grown() -> str:
        """A tool that did not exist when the server started."""
        return "the grown tool answered"

    if "grown" not in {tool.name for tool in await server.list_tools()}:
        server.add_tool(grown)
    await ctx.session.send_notification(
        types.ToolListChangedNotification(), related_request_id=ctx.request_context.request_id
    )
    return "grew a tool"


@server.prompt(description="Review a topic.")
def review(topic: str, tone: str = "plain") -> str:
    return f"Please review {topic} in a {tone} tone."


@server.resource("notes://readme", name="readme", description="The project notes.", mime_type="text/plain")
def readme() -> str:
    return "README-RESOURCE-CONTENT: the notes say hello"


app = server.sse_app() if sys.argv[3:] == ["sse"] else server.streamable_http_app()


async def guarded(scope, receive, send):
    if scope["type"] == "http":
        headers = dict(scope["headers"])
        if headers.get(b"authorization", b"").decode() != f"Bearer {TOKEN}":
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
            )
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
        if scope["method"] == "POST" and scope["path"] == "/mcp" and b"mcp-session-id" not in headers:
            with open(OPENS, "a") as opens:
                opens.write("open\n")
    await app(scope, receive, send)


if __name__ == "__main__":
    uvicorn.run(guarded, host="127.0.0.1", port=PORT, log_level="warning", lifespan="on")
