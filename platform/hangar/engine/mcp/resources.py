"""MCP resources attached to a prompt (OpenCode's FilePart whose `source` is a ResourceSource:
`{type: "resource", clientName, uri, text}`). The prompt is stored at once, as OpenCode's createUserMessage
stores it: "Reading MCP resource: <name> (<uri>)", the resource's content, then the file part itself; the
content is a text part that says which resource to read (`metadata.mcpResource`, pending) until the run's
worker reads it (`resources/read`, hangar.engine.mcp.expand), so a remote server is reached only from the
worker and a local one only through the sandbox's agent."""

from __future__ import annotations

from typing import Any

from hangar import mcp_config

PENDING = "mcpResource"
MAX_URI = 1024
MAX_PER_PROMPT = 20  # resources read for one prompt (like the files read for it)


def resource_source(part: dict[str, Any]) -> dict[str, Any] | None:
    """The part's ResourceSource, cleaned, or None when it has none (ValueError when it is malformed)."""
    source = part.get("source")
    if not isinstance(source, dict) or source.get("type") != "resource":
        return None
    client, uri = source.get("clientName"), source.get("uri")
    if not isinstance(client, str) or not mcp_config.NAME.match(client):
        raise ValueError("a resource source needs clientName: an MCP server's name")
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI:
        raise ValueError(f"a resource source needs uri: at most {MAX_URI} characters")
    # `text` (where the reference sits in the prompt) is required by OpenCode's shape: an empty one if absent.
    cleaned: dict[str, Any] = {
        "type": "resource",
        "clientName": client,
        "uri": uri,
        "text": {"value": "", "start": 0, "end": 0},
    }
    text = source.get("text")
    if isinstance(text, dict):
        value, start, end = text.get("value"), text.get("start"), text.get("end")
        if isinstance(value, str) and isinstance(start, int) and isinstance(end, int):
            cleaned["text"] = {"value": value[:MAX_URI], "start": start, "end": end}
    return cleaned


def attached(body: dict[str, Any], source: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts a resource file part becomes in the stored prompt (module doc)."""
    name = str(body.get("filename") or source["uri"])[:200]
    pending = {"server": source["clientName"], "uri": source["uri"], "name": name, "pending": True}
    return [
        {"type": "text", "synthetic": True, "text": f"Reading MCP resource: {name} ({source['uri']})"},
        {
            "type": "text",
            "synthetic": True,
            "text": "(read when the run starts)",
            "metadata": {PENDING: pending},
        },
        {**body, "source": source},
    ]
