"""Remote MCP sessions held open between calls (hangar.engine.mcp.remote), as a client that keeps its
connection does: opening one is an `initialize` round trip, its notification and, at the end, a DELETE, so a
session per call cost many times the call itself (bench/mcp_calls.py).

- **Who shares a session**: only calls with the same key: the project (tenants never share one, since a
  server may keep state per session), the server's name, URL, headers (a changed secret opens another) and
  timeout.
- **Where they live**: on one event loop, on a daemon thread of this process, so a worker thread calling
  a tool never ties a connection to itself. The caller waits on a future and gives up at its deadline or
  when the run is aborted; the request is then cancelled.
- **When they end**: a session idle for IDLE_S is closed; one idle for PING_AFTER_S is pinged before it is
  used again and reopened if the ping fails (the server may have dropped it). A call is never retried, since
  the server may have run it: a session whose call failed is closed and the next call opens a new one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TypeVar

from mcp.client.session import ClientSession

from hangar.engine.mcp.errors import McpError

IDLE_S = 300.0
PING_AFTER_S = 15.0
REAP_EVERY_S = 30.0
WAIT_STEP_S = 0.1  # how often a waiting caller looks at its abort flag

T = TypeVar("T")
Key = tuple[str, ...]
# A session's context for one transport (True: SSE), initialised on entry: hangar.engine.mcp.remote._session.
Opener = Callable[[bool], AbstractAsyncContextManager[ClientSession]]


def session_key(scope: str, name: str, url: str, headers: dict[str, str], timeout: float) -> Key:
    """The key of the calls that may share a session; the headers only as a digest (they hold secrets)."""
    digest = hashlib.sha256(json.dumps(headers, sort_keys=True).encode()).hexdigest()
    return (scope, name, url, digest, f"{timeout:g}")


@dataclass(eq=False)
class _Held:
    session: ClientSession
    closing: asyncio.Event
    used: float = field(default_factory=time.monotonic)
    busy: int = 0


class HeldSessions:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        # Touched on the loop's thread only.
        self._held: dict[Key, _Held] = {}
        self._opening: dict[Key, asyncio.Future[_Held]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def run(
        self,
        key: Key,
        opener: Opener,
        work: Callable[[ClientSession], Awaitable[T]],
        limit: float,
        abort: threading.Event | None,
    ) -> T:
        """`work` on the key's session (opened if need be) within `limit` seconds; McpError("aborted") once
        `abort` is set. Raises what the transport or `work` raised (TimeoutError at the limit)."""
        future = asyncio.run_coroutine_threadsafe(self._call(key, opener, work, limit), self._running_loop())
        while True:
            try:
                return future.result(timeout=WAIT_STEP_S)
            except concurrent.futures.TimeoutError:
                if abort is not None and abort.is_set():
                    future.cancel()
                    raise McpError("aborted") from None

    def open_count(self) -> int:
        return len(self._held)

    def close_all(self) -> None:
        """Close every held session (a test's clean slate; the worker's exit simply drops them)."""
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._close_all(), self._loop).result(timeout=30)

    # --- on the loop ---------------------------------------------------------------------------------

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="mcp-sessions", daemon=True).start()
                asyncio.run_coroutine_threadsafe(self._start_reaper(), loop).result()
                self._loop = loop
            return self._loop

    async def _start_reaper(self) -> None:
        self._spawn(self._reap())

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _call(
        self, key: Key, opener: Opener, work: Callable[[ClientSession], Awaitable[T]], limit: float
    ) -> T:
        async with asyncio.timeout(limit):
            held = await self._session(key, opener)
            held.busy += 1
            try:
                result = await work(held.session)
            except BaseException:
                self._close(key, held)
                raise
            finally:
                held.busy -= 1
                held.used = time.monotonic()
            return result

    async def _session(self, key: Key, opener: Opener) -> _Held:
        held = self._held.get(key)
        if held is not None:
            if held.busy or time.monotonic() - held.used < PING_AFTER_S:
                return held
            try:
                await held.session.send_ping()
                held.used = time.monotonic()
                return held
            except Exception:
                self._close(key, held)
        pending = self._opening.get(key)
        if pending is not None:  # another call is opening it: wait for that one
            return await asyncio.shield(pending)
        pending = asyncio.get_running_loop().create_future()
        self._opening[key] = pending
        try:
            held = await self._open(key, opener)
        except BaseException as exc:
            pending.set_exception(exc)
            pending.exception()  # retrieved: no "never retrieved" warning when nobody else waited
            raise
        finally:
            self._opening.pop(key, None)
        pending.set_result(held)
        return held

    async def _open(self, key: Key, opener: Opener) -> _Held:
        """Streamable HTTP first, SSE when the server does not speak it (OpenCode's order); the session's
        context is entered and left by one task of its own, which holds it until it is closed."""
        ready: asyncio.Future[_Held] = asyncio.get_running_loop().create_future()
        closing = asyncio.Event()

        async def hold() -> None:
            first: BaseException | None = None
            try:
                for sse in (False, True):
                    try:
                        async with opener(sse) as session:
                            held = _Held(session, closing)
                            self._held[key] = held
                            ready.set_result(held)
                            await closing.wait()
                        return
                    except Exception as exc:
                        if ready.done():
                            return  # it broke while held: the next call opens another
                        first = first or exc
                if not ready.done():
                    ready.set_exception(first or McpError("the MCP server could not be reached"))
            finally:
                current = self._held.get(key)
                if current is not None and current.closing is closing:
                    del self._held[key]

        self._spawn(hold())
        return await ready

    def _close(self, key: Key, held: _Held) -> None:
        held.closing.set()
        if self._held.get(key) is held:
            del self._held[key]

    async def _close_all(self) -> None:
        for key, held in list(self._held.items()):
            self._close(key, held)
        await asyncio.sleep(0)

    async def _reap(self) -> None:
        while True:
            await asyncio.sleep(REAP_EVERY_S)
            now = time.monotonic()
            for key, held in list(self._held.items()):
                if not held.busy and now - held.used > IDLE_S:
                    self._close(key, held)


SESSIONS = HeldSessions()
