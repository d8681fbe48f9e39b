"""One request to an identity provider, bounded so that a slow or hostile provider cannot hold the web tier:
a total deadline (HANGAR_SSO_TIMEOUT_S) over connect, headers and body together (httpx's timeouts are per
read: a provider answering a byte a second never tripped them), at most HANGAR_SSO_MAX_IN_FLIGHT requests
per provider host in this process (the rest are refused at once, not queued), and no database connection
held while it waits: the request thread gives its pooled connection back first (outside a transaction;
the next query takes one again)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
from django.conf import settings
from django.db import connection

_slots: dict[str, threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()


class Unavailable(Exception):
    """The provider did not answer in time, failed, or has too many requests in flight (message says which)."""


def _slot(host: str) -> threading.BoundedSemaphore:
    with _slots_lock:
        slot = _slots.get(host)
        if slot is None:
            slot = _slots[host] = threading.BoundedSemaphore(settings.HANGAR_SSO_MAX_IN_FLIGHT)
        return slot


def release_db_connection() -> None:
    """Give this thread's DB connection back (to the pool, when there is one) before waiting on the
    network. Inside a transaction it must stay: closing would break the transaction."""
    if not connection.in_atomic_block:
        connection.close()


async def _fetch(method: str, url: str, max_bytes: int, timeout: float, **kwargs) -> tuple[int, bytes]:
    async with (
        httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client,
        client.stream(method, url, **kwargs) as response,
    ):
        body = b""
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > max_bytes:
                raise Unavailable(f"The identity provider's answer is over {max_bytes} bytes.")
        return response.status_code, body


def _run(coroutine):
    """Run a coroutine to completion from sync code, also when this thread already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def fetch(method: str, url: str, *, slot: str, max_bytes: int, **kwargs) -> tuple[int, bytes]:
    """(status, body) of one request, within the deadline. Unavailable otherwise."""
    deadline = float(settings.HANGAR_SSO_TIMEOUT_S)
    gate = _slot(slot)
    if not gate.acquire(blocking=False):
        raise Unavailable("The identity provider has too many requests in flight; try again shortly.")
    try:
        release_db_connection()
        return _run(asyncio.wait_for(_fetch(method, url, max_bytes, deadline, **kwargs), deadline))
    except TimeoutError:
        raise Unavailable(f"The identity provider did not answer within {deadline:g} s.") from None
    except httpx.HTTPError as exc:
        raise Unavailable(f"The identity provider did not answer ({type(exc).__name__}).") from None
    finally:
        gate.release()
