"""The one error an MCP server's call raises, local or remote: here, apart from the clients, so that a
process which never calls a remote server never imports the `mcp` SDK's client (hangar.engine.mcp.remote)."""


class McpError(Exception):
    """The server could not be reached or answered with an error; the message is safe to show (no
    header, no secret: it names the server's URL host at most)."""
