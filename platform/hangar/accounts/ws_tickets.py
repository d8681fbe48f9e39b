"""WebSocket tickets: a browser cannot set headers on a WebSocket, and a token in the URL (`?token=`) is kept
by proxies, access logs and history. A client asks the API for a ticket instead (with its token or its
browser session), and opens the socket with `?ticket=`. A ticket is random, stored only as its digest in
the cache (Redis), good for HANGAR_WS_TICKET_TTL_S seconds and one connection, and acts exactly as the
credential that asked for it: a token's ticket is that token (checked again when redeemed: a revoked
token's ticket opens nothing), a session's ticket is that user."""

from __future__ import annotations

import hashlib
import secrets

from django.conf import settings
from django.core.cache import cache

from hangar.accounts.models import ApiToken, User

PREFIX = "wst_"


def _key(raw: str) -> str:
    return f"ws_ticket_{hashlib.sha256(raw.encode()).hexdigest()}"


def ticket_issue(*, user: User, token: ApiToken | None) -> str:
    raw = PREFIX + secrets.token_urlsafe(32)
    data = {"user": user.pk, "token": token.digest if token is not None else None}
    cache.set(_key(raw), data, timeout=settings.HANGAR_WS_TICKET_TTL_S)
    return raw


def ticket_redeem(raw: str) -> tuple[User, str | None] | None:
    """(the user, the token digest to resolve, or None for a session's ticket), once per ticket; None for a
    ticket that is unknown, used or expired. Only one of two racing redeemers gets it (the delete decides)."""
    if not raw.startswith(PREFIX) or len(raw) > 100:
        return None
    key = _key(raw)
    data = cache.get(key)
    if not isinstance(data, dict) or not isinstance(data.get("user"), int) or not cache.delete(key):
        return None
    user = User.objects.filter(pk=data["user"], is_active=True).first()
    return (user, data.get("token")) if user is not None else None
