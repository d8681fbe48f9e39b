"""One bounded HTTP POST for an outbound delivery (hangar.integrations.webhooks.outbound).

An endpoint is someone else's server, and a slow or hostile one must cost a worker little: the attempt has
one total deadline (`deadline_s`: connecting, sending, the headers and the body all count, so an answer of
one byte a second is cut, where a per-read timeout never fires), and the answer is read only up to
`keep` bytes (what the delivery log keeps), then the connection is dropped, whatever its length. httpcore
directly, with a network backend that clamps every socket operation to the time left; no redirect is
followed."""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from typing import Any

import certifi
import httpcore


class DeadlinePassed(httpcore.TimeoutException):
    pass


class _Clock:
    def __init__(self, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.until = time.monotonic() + deadline_s

    def left(self, timeout: float | None) -> float:
        left = self.until - time.monotonic()
        if left <= 0:
            raise DeadlinePassed(f"the attempt's deadline of {self.deadline_s:g} s passed")
        return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, clock: _Clock) -> None:
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


class _Backend(httpcore.SyncBackend):
    def __init__(self, clock: _Clock) -> None:
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


@dataclass
class Answer:
    status: int
    body: bytes  # at most `keep` bytes of it


ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)


def post(
    url: str, *, body: bytes, headers: dict[str, str], sni: str | None, deadline_s: float, keep: int
) -> Answer:
    """POST `body` to `url` (an address already checked and pinned); raises one of ERRORS (DeadlinePassed
    when the total deadline passed)."""
    clock = _Clock(deadline_s)
    timeout = {"connect": deadline_s, "read": deadline_s, "write": deadline_s, "pool": deadline_s}
    extensions: dict[str, Any] = {"timeout": timeout, **({"sni_hostname": sni} if sni else {})}
    context = ssl.create_default_context(cafile=certifi.where())
    pool = httpcore.ConnectionPool(ssl_context=context, network_backend=_Backend(clock), retries=0)
    sent = [*headers.items(), ("content-length", str(len(body)))]
    try:
        with pool, pool.stream("POST", url, headers=sent, content=body, extensions=extensions) as response:
            kept = bytearray()
            for chunk in response.iter_stream():
                kept += chunk[: keep - len(kept)]
                if len(kept) >= keep:
                    break  # the rest is never read: closing drops the connection
            return Answer(status=response.status, body=bytes(kept))
    except httpcore.TimeoutException as exc:
        if time.monotonic() >= clock.until:  # a socket timeout clamped to the time left
            raise DeadlinePassed(f"the attempt's deadline of {deadline_s:g} s passed") from exc
        raise
