"""One total deadline for an outbound HTTP request, whatever the peer does.

A per-read timeout never fires against a server that answers one byte at a time, and a check between
chunks waits for a whole chunk. `DeadlineBackend` is an httpcore network backend that clamps every
socket operation (connect, TLS, each read and write) to the time left, and raises `DeadlinePassed` once
it is gone. Used by outbound webhooks (hangar.integrations.webhooks.transport) and webfetch
(hangar.engine.tools.fetching). A shared helper: it imports none of the apps."""

from __future__ import annotations

import ssl
import time
from typing import Any

import httpcore
import httpx


class DeadlinePassed(httpcore.ReadTimeout):
    pass


class Clock:
    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.until = time.monotonic() + deadline_s

    def passed(self) -> bool:
        return time.monotonic() >= self.until

    def left(self, timeout: float | None) -> float:
        left = self.until - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(f"the deadline of {self.deadline_s:g} s passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, clock: Clock) -> None:
        self.inner, self.clock = inner, clock

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self.inner.read(max_bytes, self.clock.left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.inner.write(buffer, self.clock.left(timeout))

    def close(self) -> None:
        self.inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(
            self.inner.start_tls(ssl_context, server_hostname, self.clock.left(timeout)), self.clock
        )

    def get_extra_info(self, info: str) -> Any:
        return self.inner.get_extra_info(info)


class DeadlineBackend(httpcore.SyncBackend):
    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> httpcore.NetworkStream:
        stream = super().connect_tcp(host, port, self.clock.left(timeout), local_address, socket_options)
        return _Stream(stream, self.clock)


def httpx_transport(clock: Clock) -> httpx.HTTPTransport:
    """An httpx transport whose every socket operation keeps to `clock` (httpx takes no network backend:
    its pool's is replaced, as hangar.engine.providers.httpx_guard does)."""
    transport = httpx.HTTPTransport(retries=0)
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise RuntimeError("httpx's transport changed shape: the deadline cannot attach")
    pool._network_backend = DeadlineBackend(clock)
    return transport
