"""One bounded HTTP POST for an outbound delivery (hangar.integrations.webhooks.outbound).

An endpoint is someone else's server, and a slow or hostile one must cost a worker little: the attempt has
one total deadline (`deadline_s`: connecting, sending, the headers and the body all count, so an answer of
one byte a second is cut, where a per-read timeout never fires), and the answer is read only up to
`keep` bytes (what the delivery log keeps), then the connection is dropped, whatever its length. httpcore
directly, with a network backend that clamps every socket operation to the time left
(hangar.http_deadline); no redirect is followed."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import Any

import certifi
import httpcore

from hangar.http_deadline import Clock, DeadlineBackend, DeadlinePassed


@dataclass
class Answer:
    status: int
    body: bytes  # at most `keep` bytes of it


__all__ = ["ERRORS", "Answer", "DeadlinePassed", "post"]

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
    clock = Clock(deadline_s)
    timeout = {"connect": deadline_s, "read": deadline_s, "write": deadline_s, "pool": deadline_s}
    extensions: dict[str, Any] = {"timeout": timeout, **({"sni_hostname": sni} if sni else {})}
    context = ssl.create_default_context(cafile=certifi.where())
    pool = httpcore.ConnectionPool(ssl_context=context, network_backend=DeadlineBackend(clock), retries=0)
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
        if clock.passed():  # a socket timeout clamped to the time left
            raise DeadlinePassed(f"the attempt's deadline of {deadline_s:g} s passed") from exc
        raise
