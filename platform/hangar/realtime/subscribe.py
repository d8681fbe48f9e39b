"""Waiting for events from async code: a private channel joined to channel-layer groups.

    async with subscribe([project_group(project.pk)]) as sub:   # subscribed for sure on entry
        ...start the work whose events you want...
        async for event in sub:                                  # {"seq", "type", "payload", "session", ...}
            ...

or simply `async for event in stream_events(groups)` (SSE views).

Two details that the plain Channels API gets wrong for this use:
- **Subscription barrier.** `group_add` only *sends* SUBSCRIBE to Redis; a PUBLISH from another connection
  may still overtake it. On entry we publish a nonce to each group and wait until it comes back, so every
  event published after `__aenter__` returns is delivered. Readers that replay from Postgres after entry
  therefore have no gap (hangar.realtime.consumers relies on this).
- **No cancelled receives.** channels_redis drops the channel when a `receive()` is cancelled (e.g. by
  `asyncio.wait_for`), so one pump task owns `receive()` and feeds a local queue; timeouts wait on that
  queue instead.
- **A receiver that is awake.** channels_redis' receiver task reads Redis only while something is
  subscribed, and otherwise sleeps 0.1 s between checks: in a web process with no other listener the first
  subscription waited out that sleep (GET /event's first byte took ~105 ms, ~10 ms with another stream
  open). One channel per event loop stays subscribed for the life of the process.
"""

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from channels.layers import get_channel_layer

from hangar.logging import get_logger

log = get_logger(__name__)
_awake_loops: set[int] = set()  # event loops whose channel layer keeps a standing subscription

EVENT = "hangar.event"  # message type carrying one event under "event"
BARRIER = "hangar.barrier"  # subscription probes; every listener ignores foreign nonces


class Subscription:
    def __init__(self, groups: list[str], *, barrier_timeout: float = 5.0):
        self.groups = list(groups)
        self.barrier_timeout = barrier_timeout
        self.layer: Any = None  # the channel layer (channels ships no types)
        self.channel: str | None = None
        self._queue: asyncio.Queue = asyncio.Queue()
        self._pump: asyncio.Task | None = None

    async def __aenter__(self) -> "Subscription":
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def open(self) -> None:
        self.layer = get_channel_layer()
        await _keep_receiver_awake(self.layer)
        self.channel = await self.layer.new_channel()
        self._pump = asyncio.ensure_future(self._run_pump())
        for group in self.groups:
            await self.layer.group_add(group, self.channel)
        await self._barrier()

    async def close(self) -> None:
        if self.layer is None or self.channel is None:
            return
        for group in self.groups:
            with contextlib.suppress(Exception):
                await self.layer.group_discard(group, self.channel)
        if self._pump is not None:
            # Cancelling the pending receive() makes channels_redis unsubscribe the private channel.
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._pump
        self.channel = None

    async def get(self, timeout: float | None = None) -> dict | None:
        """The next event, or None after `timeout` seconds without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                message = await asyncio.wait_for(self._queue.get(), remaining)
            except TimeoutError:
                return None
            if message.get("type") == EVENT:
                return message["event"]

    def __aiter__(self):
        return self

    async def __anext__(self) -> dict:
        event = await self.get()
        assert event is not None
        return event

    async def _run_pump(self) -> None:
        while True:
            message = await self.layer.receive(self.channel)
            self._queue.put_nowait(message)

    async def _barrier(self) -> None:
        nonce = uuid.uuid4().hex
        pending = set(self.groups)
        held: list[dict] = []  # events that arrive while we wait are kept, in order
        deadline = time.monotonic() + self.barrier_timeout
        while pending and time.monotonic() < deadline:
            for group in pending:
                await self.layer.group_send(group, {"type": BARRIER, "nonce": nonce, "group": group})
            resend_at = time.monotonic() + 0.25  # a probe that overtook SUBSCRIBE is lost: send again
            while pending and time.monotonic() < resend_at:
                try:
                    message = await asyncio.wait_for(self._queue.get(), resend_at - time.monotonic())
                except TimeoutError:
                    break
                if message.get("type") == BARRIER:
                    if message.get("nonce") == nonce:
                        pending.discard(message.get("group"))
                else:
                    held.append(message)
        if pending:
            log.warning("subscription_barrier_timeout", groups=sorted(pending))
        # Put held events back in front of anything that arrived meanwhile.
        rest = []
        while not self._queue.empty():
            rest.append(self._queue.get_nowait())
        for message in held + rest:
            self._queue.put_nowait(message)


async def _keep_receiver_awake(layer) -> None:
    loop = id(asyncio.get_running_loop())
    if loop not in _awake_loops:
        _awake_loops.add(loop)
        await layer.new_channel(prefix="standing.")  # never published to, never left


def subscribe(groups: list[str], **kwargs) -> Subscription:
    return Subscription(groups, **kwargs)


async def stream_events(groups: list[str]) -> AsyncIterator[dict]:
    """Yield every event broadcast to `groups` from the moment the first value is requested.
    Closing the generator (or cancelling its consumer) leaves the groups and drops the channel."""
    async with subscribe(groups) as sub:
        async for event in sub:
            yield event
