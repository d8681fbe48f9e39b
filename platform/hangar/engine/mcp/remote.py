"""A remote MCP server, called from the worker with the official `mcp` SDK: Streamable HTTP first, SSE when
the server does not speak it (OpenCode's order). Sessions are held open between calls, per project and
server, on an event loop of this process's own (hangar.engine.mcp.held says who shares one and when it
ends).

The headers are the server's config with `{env:NAME}` filled in by the caller (hangar.engine.mcp.tools):
they go only into this process's HTTP requests, never a sandbox, an event or a log line. Answers are plain
JSON-able dicts (the wire shape), the same as a local server's through the sandbox agent."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from hangar.engine.mcp import changes, guard, held, refusals
from hangar.engine.mcp.errors import McpError

T = TypeVar("T")
MAX_RESPONSE_BYTES = 8 << 20  # one HTTP answer (the model sees at most 50 KB of a result anyway)
CONNECT_S = 10.0


def _client_factory(headers: dict[str, str], timeout: float) -> Callable[..., httpx2.AsyncClient]:
    def make(
        headers: dict[str, str] | None = headers, timeout: Any = None, auth: Any = None
    ) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(CONNECT_S, read=timeout_s),
            transport=guard.GuardedTransport(MAX_RESPONSE_BYTES),
            trust_env=False,
            event_hooks={"response": [refusals.note]},  # a 401 is told apart (hangar.engine.mcp.refusals)
        )

    timeout_s = timeout
    return make


@asynccontextmanager
async def _session(
    url: str, headers: dict[str, str], timeout: float, sse: bool, on_message: Any = None
) -> AsyncIterator[ClientSession]:
    factory = _client_factory(headers, timeout)
    if sse:
        async with (
            sse_client(
                url,
                headers=headers,
                timeout=CONNECT_S,
                sse_read_timeout=timeout,
                httpx_client_factory=factory,
            ) as (r, w),
            ClientSession(r, w, read_timeout_seconds=timeout, message_handler=on_message) as session,
        ):
            await session.initialize()
            yield session
        return
    async with (
        factory() as http,
        streamable_http_client(url, http_client=http, max_sse_event_size=MAX_RESPONSE_BYTES) as (r, w),
        ClientSession(r, w, read_timeout_seconds=timeout, message_handler=on_message) as session,
    ):
        await session.initialize()
        yield session


def _check_host(url: str) -> str:
    """The URL's host, refused early (a clear error) when the guard would refuse it at connect."""
    parts = urlsplit(url)
    try:
        guard.resolve(parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))
    except guard.Refused as exc:
        raise McpError(str(exc)) from None
    except OSError as exc:
        raise McpError(f"the MCP server's host {parts.hostname} does not resolve: {exc}") from None
    return parts.hostname or ""


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _run(
    server: Server,
    work: Callable[[ClientSession], Awaitable[T]],
    abort: threading.Event | None,
    limit: float,
) -> T:
    """`work` on the server's held session (opened if need be), within `limit` seconds, given up when
    `abort` is set."""
    host = _check_host(server.url)
    key = held.session_key(server.scope, server.name, server.url, server.headers, server.timeout)

    def opener(sse: bool) -> AbstractAsyncContextManager[ClientSession]:
        # A tools/list_changed notification bumps the server's tools version (hangar.engine.mcp.changes).
        on_message = changes.on_message(server.scope, server.name)
        return _session(server.url, server.headers, server.timeout, sse, on_message)

    try:
        return held.SESSIONS.run(key, opener, work, limit + CONNECT_S, abort)
    except McpError:
        raise
    except TimeoutError:
        raise McpError(f"the MCP server did not answer within {limit:g} s") from None
    except Exception as exc:  # an ExceptionGroup from a task group: its first leaf says what failed
        leaf = _leaf(exc)
        if isinstance(leaf, McpError):
            raise leaf from None
        raise McpError(_describe(leaf, host)) from None


def _describe(exc: BaseException, host: str) -> str:
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"the MCP server at {host} answered HTTP {exc.response.status_code}"
    if isinstance(exc, TimeoutError):
        return "the MCP server did not answer in time"
    message = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return f"{type(exc).__name__}: {message}"


@dataclass(frozen=True)
class Server:
    """Where a call goes: `scope` (the project) and `name` bound who shares its session with it; `timeout`
    is the server's own (its session's read timeout, and a call's unless it asks for less)."""

    scope: str
    name: str
    url: str
    headers: dict[str, str] = field(repr=False)  # secrets filled in: never printed
    timeout: float


def list_tools(server: Server, limit: float | None = None) -> list[dict[str, Any]]:
    """The server's tools as `{name, description, inputSchema}` (every page)."""

    async def work(session: ClientSession) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(20):  # pages: bounded, a server could page for ever
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    return _run(server, work, None, min(limit or server.timeout, server.timeout))


def call_tool(server: Server, tool: str, arguments: dict[str, Any], abort: threading.Event) -> dict[str, Any]:
    """One tool call's result as the wire's `CallToolResult` (`content`, `isError`, ...)."""

    async def work(session: ClientSession) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        return result.model_dump(mode="json", by_alias=True, exclude_none=True)

    return _run(server, work, abort, server.timeout)
