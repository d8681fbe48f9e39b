"""Which credentials a remote MCP server refused (HTTP 401), noted by a response hook on every MCP HTTP
client (hangar.engine.mcp.remote). The SDK's transports turn a 401 into a generic error, so without this a
caller could not tell "the token is no good: refresh it, or the member must sign in again" from any other
failure (hangar.engine.mcp.oauth_client asks after a failed call).

Keyed by the host and a digest of the Authorization header (never the header itself); a refusal without
one counts only when it was an OAuth challenge (`WWW-Authenticate: Bearer ...`), which is how a server that
needs OAuth says so. Entries lapse after TTL_S; at most MAX_ENTRIES are kept."""

from __future__ import annotations

import hashlib
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:  # the SDK's HTTP client is loaded with the first remote call, not with this module
    import httpx2

TTL_S = 600.0
MAX_ENTRIES = 4096

_lock = threading.Lock()
_refused: dict[str, float] = {}


def _key(host: str, authorization: str) -> str:
    return hashlib.sha256(f"{host.lower()}\0{authorization}".encode()).hexdigest()


async def note(response: httpx2.Response) -> None:
    """httpx's response hook: remember a 401 to the credential the request carried."""
    if response.status_code != 401:
        return
    authorization = response.request.headers.get("Authorization", "")
    challenge = response.headers.get("WWW-Authenticate", "")
    if not authorization and not challenge.lower().startswith("bearer"):
        return
    now = time.monotonic()
    with _lock:
        if len(_refused) >= MAX_ENTRIES:
            for key, at in list(_refused.items()):
                if now - at > TTL_S or len(_refused) >= MAX_ENTRIES:
                    del _refused[key]
        _refused[_key(response.request.url.host, authorization)] = now


def refused(url: str, bearer: str | None) -> bool:
    """Whether the server at `url` answered 401 to this bearer token (None: to no credential) lately."""
    authorization = f"Bearer {bearer}" if bearer else ""
    key = _key(urlsplit(url).hostname or "", authorization)
    with _lock:
        at = _refused.get(key)
        return at is not None and time.monotonic() - at <= TTL_S
