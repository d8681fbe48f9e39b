"""A remote server's prompts and resources (hangar.engine.mcp.content), on the same held session and through
the same guard as its tools (hangar.engine.mcp.remote). A list asks only a server that advertised the
capability at `initialize`, so a server without prompts or resources costs no round trip."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.client.session import ClientSession

from hangar.engine.mcp.remote import Server, _run

MAX_PAGES = 5


def _dump(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def list_prompts(server: Server, limit: float) -> list[dict[str, Any]]:
    async def work(session: ClientSession) -> list[dict[str, Any]]:
        capabilities = session.server_capabilities
        if capabilities is None or capabilities.prompts is None:
            return []
        prompts: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_prompts(params=params)
            prompts += [_dump(p) for p in page.prompts]
            cursor = page.next_cursor
            if not cursor:
                break
        return prompts

    return _run(server, work, None, min(limit, server.timeout))


def list_resources(server: Server, limit: float) -> list[dict[str, Any]]:
    async def work(session: ClientSession) -> list[dict[str, Any]]:
        capabilities = session.server_capabilities
        if capabilities is None or capabilities.resources is None:
            return []
        resources: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_resources(params=params)
            resources += [_dump(r) for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
        return resources

    return _run(server, work, None, min(limit, server.timeout))


def get_prompt(server: Server, name: str, arguments: dict[str, str], limit: float) -> dict[str, Any]:
    """The wire's GetPromptResult (`messages`, `description`)."""

    async def work(session: ClientSession) -> dict[str, Any]:
        return _dump(await session.get_prompt(name, arguments))

    return _run(server, work, None, min(limit, server.timeout))


def read_resource(server: Server, uri: str, limit: float) -> dict[str, Any]:
    """The wire's ReadResourceResult (`contents`: text or base64 blob items)."""

    async def work(session: ClientSession) -> dict[str, Any]:
        return _dump(await session.read_resource(uri))

    return _run(server, work, None, min(limit, server.timeout))
