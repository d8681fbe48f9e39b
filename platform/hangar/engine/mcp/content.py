"""MCP servers' prompts and resources (OpenCode's MCP.prompts, MCP.resources, getPrompt, readResource), for
a remote server through the worker's held session (hangar.engine.mcp.remote_content) or a local one through
the sandbox's agent. Everything a server sends is cleaned and bounded here: how many, how long each field,
how much text a prompt or resource gives the model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.local import LocalServer
from hangar.engine.mcp.oauth_client import OAuthRemoteServer

T = TypeVar("T")

LIST_TIMEOUT_S = 10.0
FETCH_TIMEOUT_S = 30.0
MAX_PROMPTS = 100  # per server
MAX_RESOURCES = 200  # per server
MAX_ARGUMENTS = 20  # per prompt
MAX_FIELD = 1024  # a name, a URI, a MIME type
MAX_DESCRIPTION = 2048
MAX_TEXT = 256 * 1024  # of a prompt's or a resource's text: what a text attachment gives the model


def _str(value: Any, limit: int = MAX_FIELD) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _on_remote(client: Any, work: Callable[[Any], T]) -> T:
    """`work` with the remote server's `remote.Server`: the project's, or the member's OAuth one (its token
    refreshed as its tool calls' are: hangar.engine.mcp.oauth_client)."""
    if isinstance(client, OAuthRemoteServer):
        return client.on_session(work)
    from hangar.engine.mcp import remote

    return work(remote.Server(client.scope, client.name, client.url, client.headers, client.timeout_s))


def _listed(client: Any, kind: str) -> list[dict[str, Any]]:
    """A server's prompts or resources as it sent them: [] when it has none (it did not advertise them at
    initialize, or, a local server, answers the method with an error)."""
    if isinstance(client, LocalServer):
        if client.capabilities is not None and kind not in client.capabilities:
            return []  # it said at initialize it has none: no round trip through the sandbox
        try:
            page = client.request(f"{kind}/list", {}, LIST_TIMEOUT_S)
        except McpError:
            return []
        items = page.get(kind)
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    from hangar.engine.mcp import remote_content

    lister = remote_content.list_prompts if kind == "prompts" else remote_content.list_resources
    return _on_remote(client, lambda server: lister(server, LIST_TIMEOUT_S))


def list_prompts(client: Any) -> list[dict[str, Any]]:
    """`{name, description?, arguments: [{name, description?, required?}]}`, at most MAX_PROMPTS."""
    out: list[dict[str, Any]] = []
    for item in _listed(client, "prompts"):
        name = _str(item.get("name"), 200)
        if not name:
            continue
        arguments = []
        for argument in (item.get("arguments") or [])[:MAX_ARGUMENTS]:
            if isinstance(argument, dict) and _str(argument.get("name"), 200):
                arguments.append(
                    {
                        "name": _str(argument["name"], 200),
                        "description": _str(argument.get("description"), MAX_DESCRIPTION),
                        "required": argument.get("required") is True,
                    }
                )
        description = _str(item.get("description"), MAX_DESCRIPTION)
        out.append({"name": name, "description": description, "arguments": arguments})
        if len(out) >= MAX_PROMPTS:
            break
    return out


def list_resources(client: Any) -> list[dict[str, Any]]:
    """OpenCode's McpResource without `client`: `{name, uri, description?, mimeType?}`."""
    out: list[dict[str, Any]] = []
    for item in _listed(client, "resources"):
        name, uri = _str(item.get("name"), 200), _str(item.get("uri"))
        if not name or not uri:
            continue
        resource = {"name": name, "uri": uri}
        if _str(item.get("description"), MAX_DESCRIPTION):
            resource["description"] = _str(item["description"], MAX_DESCRIPTION)
        if _str(item.get("mimeType"), 200):
            resource["mimeType"] = _str(item["mimeType"], 200)
        out.append(resource)
        if len(out) >= MAX_RESOURCES:
            break
    return out


def _bounded(pieces: list[str]) -> str:
    text = "\n".join(pieces)
    if len(text.encode()) <= MAX_TEXT:
        return text
    return text.encode()[:MAX_TEXT].decode("utf-8", "ignore") + "\n[... cut at 256 KB]"


def prompt_text(client: Any, name: str, arguments: dict[str, str]) -> str:
    """The prompt's messages' text, joined as OpenCode joins them (a message that is not text gives an
    empty line)."""
    if isinstance(client, LocalServer):
        result = client.request("prompts/get", {"name": name, "arguments": arguments}, FETCH_TIMEOUT_S)
    else:
        from hangar.engine.mcp import remote_content

        result = _on_remote(
            client, lambda server: remote_content.get_prompt(server, name, arguments, FETCH_TIMEOUT_S)
        )
    pieces = []
    for message in (result.get("messages") or [])[:100]:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, dict) and content.get("type") == "text":
            pieces.append(_str(content.get("text"), MAX_TEXT))
        elif isinstance(content, dict) and content.get("type") == "resource":
            pieces.append(_str((content.get("resource") or {}).get("text"), MAX_TEXT))
        else:
            pieces.append("")
    return _bounded(pieces)


def resource_text(client: Any, uri: str) -> str:
    """The resource's contents as text: each text item, a binary one named by its type (OpenCode's
    "[Binary content: ...]")."""
    if isinstance(client, LocalServer):
        result = client.request("resources/read", {"uri": uri}, FETCH_TIMEOUT_S)
    else:
        from hangar.engine.mcp import remote_content

        result = _on_remote(client, lambda server: remote_content.read_resource(server, uri, FETCH_TIMEOUT_S))
    pieces = []
    for item in (result.get("contents") or [])[:100]:
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str):
            pieces.append(_str(item["text"], MAX_TEXT))
        elif item.get("blob"):
            pieces.append(f"[Binary content: {_str(item.get('mimeType'), 200) or 'unknown type'}]")
    return _bounded(pieces)
