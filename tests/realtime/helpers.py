"""WebSocket test helpers: connect to the real ASGI app (auth middleware, routing, Redis layer)."""

import json

from channels.testing import WebsocketCommunicator

from hangar.asgi import application

ORIGIN = (b"origin", b"http://testserver")  # the app validates Origin against ALLOWED_HOSTS


def communicator(
    path: str, *, token: str | None = None, header_token: str | None = None, cookie: str | None = None
) -> WebsocketCommunicator:
    """`token` and `header_token` both send `Authorization: Bearer` (a token never rides in the URL:
    tests/realtime/test_ws_tickets.py); a browser's way is a ticket in the path (`?ticket=`)."""
    headers = [ORIGIN]
    header_token = header_token if header_token is not None else token
    if header_token is not None:
        headers.append((b"authorization", f"Bearer {header_token}".encode()))
    if cookie is not None:
        headers.append((b"cookie", cookie.encode()))
    return WebsocketCommunicator(application, path, headers=headers)


async def receive_frames(comm: WebsocketCommunicator, count: int, timeout: float = 5.0) -> list[dict]:
    return [json.loads(await comm.receive_from(timeout=timeout)) for _ in range(count)]


async def receive_until_seq(comm: WebsocketCommunicator, last_seq: int, timeout: float = 10.0) -> list[dict]:
    """Frames until one with seq == last_seq (ephemeral frames included in the result)."""
    frames = []
    while True:
        frame = json.loads(await comm.receive_from(timeout=timeout))
        frames.append(frame)
        if frame.get("seq") is not None and frame["seq"] >= last_seq:
            return frames
