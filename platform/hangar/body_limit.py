"""A cap on a request body, checked while it streams (ASGI), for the paths that take large bodies.

Django's ASGI handler reads a whole request body into a temporary file before any view runs, so a view
that checks an upload's size does so after the web process has taken all of it in (a 10 GB upload was
spooled to disk, then refused). This wrapper answers 413 at once when the declared Content-Length is over
the cap, and counts the body as it arrives otherwise (chunked, or a length that lies), cutting it off at
the cap. Only the paths given are capped; the rest go through untouched."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
AnyApp = Callable[..., Awaitable[None]]  # Django's ASGIHandler types its receive and send more loosely


class _TooLarge(Exception):
    pass


async def _refuse(send: Send, limit: int) -> None:
    body = b'{"error": {"code": "too_large", "message": "The request body is over %d bytes."}}' % limit
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send(
        {"type": "http.response.start", "status": 413, "headers": [*headers, (b"connection", b"close")]}
    )
    await send({"type": "http.response.body", "body": body})


def _declared(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def body_limited(app: AnyApp, limits: list[tuple[re.Pattern[str], Callable[[], int]]]) -> App:
    """`app` with each path matching a pattern capped at its limit (a callable: read per request, so a
    setting changed in tests applies)."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        limit = next((cap() for pattern, cap in limits if pattern.search(scope.get("path", ""))), None)
        if scope["type"] != "http" or limit is None:
            return await app(scope, receive, send)
        declared = _declared(scope)
        if declared is not None and declared > limit:
            return await _refuse(send, limit)
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        async def sending(message: Message) -> None:
            nonlocal started
            started = True
            await send(message)

        try:
            await app(scope, counted, sending)
        except _TooLarge:
            if not started:
                await _refuse(send, limit)
        return None

    return wrapped


def install_in_daphne(limit_for: Callable[[bytes], int | None]) -> bool:
    """The same cap where Daphne (deploy/run-web.sh) receives the body: Twisted reads a request's whole
    body into a file before Daphne calls the application, so an ASGI wrapper sees an upload only once it
    has all been taken in. Here the declared length is checked when the headers end (gotLength) and the
    body counted as it arrives (handleContentChunk): over the cap, a 413 is written, the connection
    closed, and the request never reaches the application. `limit_for(path)`: the cap, or None."""
    try:
        from daphne.http_protocol import WebRequest
    except ImportError:
        return False
    if getattr(WebRequest, "_hangar_capped", False):
        return True
    got_length, content_chunk, process = (
        WebRequest.gotLength,
        WebRequest.handleContentChunk,
        WebRequest.process,
    )

    def refuse(request: Any, limit: int) -> None:
        request._hangar_refused = True
        body = b'{"error": {"code": "too_large", "message": "The request body is over %d bytes."}}' % limit
        head = b"HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
        head += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
        request.channel.transport.write(head + body)
        request.channel.transport.loseConnection()

    def capped_got_length(self: Any, length: int | None) -> None:
        path = (getattr(self.channel, "_path", b"") or b"").split(b"?", 1)[0]
        self._hangar_limit, self._hangar_seen, self._hangar_refused = limit_for(path), 0, False
        if self._hangar_limit is not None and length is not None and length > self._hangar_limit:
            got_length(self, 0)  # nothing of it is kept
            refuse(self, self._hangar_limit)
            return
        got_length(self, length)

    def capped_chunk(self: Any, data: bytes) -> None:
        if getattr(self, "_hangar_refused", False):
            return
        limit = getattr(self, "_hangar_limit", None)
        if limit is not None:
            self._hangar_seen += len(data)
            if self._hangar_seen > limit:
                refuse(self, limit)
                return
        content_chunk(self, data)

    def capped_process(self: Any) -> None:
        if getattr(self, "_hangar_refused", False):
            return None  # answered already; the application never sees it
        return process(self)

    WebRequest.gotLength = capped_got_length
    WebRequest.handleContentChunk = capped_chunk
    WebRequest.process = capped_process
    WebRequest._hangar_capped = True
    return True
