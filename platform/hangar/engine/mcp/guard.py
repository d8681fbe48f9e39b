"""Where a remote MCP server may be: the rule of sandbox.netguard, opened only by the operator's
HANGAR_MCP_ALLOWED_NETWORKS (CIDRs). The check runs on the resolved addresses when a call starts (a clear
error) and again on the very address each connection goes to (`GuardedBackend`), so a name that resolves
elsewhere in between (DNS rebinding) cannot reach the platform's own services or the metadata address."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import anyio
import httpcore2
import httpx2
from django.conf import settings

from sandbox import netguard

Refused = netguard.Refused


def resolve(host: str, port: int) -> Sequence[netguard.AddrInfo]:
    allowed = netguard.networks(settings.HANGAR_MCP_ALLOWED_NETWORKS)
    return netguard.resolve(
        host, port, allowed, setting="HANGAR_MCP_ALLOWED_NETWORKS", what="the MCP server "
    )


class GuardedBackend(httpcore2.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to checked answers of the name (TLS still verifies the
    name itself: httpcore starts TLS with the origin's host, not the address connected to)."""

    def __init__(self, inner: httpcore2.AsyncNetworkBackend):
        self._inner = inner

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        infos = await anyio.to_thread.run_sync(resolve, host, port)
        error: Exception | None = None
        for info in infos:
            try:
                return await self._inner.connect_tcp(
                    str(info[4][0]),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (OSError, httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                error = exc
        raise error or httpcore2.ConnectError(f"no address for {host}")

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("unix sockets are not MCP servers")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class _Capped(httpx2.AsyncByteStream):
    """A response body that ends the call once it passes `limit` bytes (a server's answer is bounded before
    it is parsed: the model gets at most 50 KB of it anyway)."""

    def __init__(self, inner: httpx2.AsyncByteStream, limit: int):
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise httpx2.ReadError(f"the MCP server's response passed {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class GuardedTransport(httpx2.AsyncHTTPTransport):
    """No proxies from the environment, checked addresses only, bounded bodies."""

    def __init__(self, max_bytes: int):
        super().__init__(trust_env=False)
        pool = self._pool
        # httpx exposes no seam for the network backend: its pool's is swapped for the guarded one.
        pool._network_backend = GuardedBackend(pool._network_backend)
        self._max_bytes = max_bytes

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await super().handle_async_request(request)
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        response.stream = _Capped(stream, self._max_bytes)
        return response
