"""API token material: `hgr_<prefix>_<secret>`. Only HMAC-SHA256(pepper, token) is stored. Peppers
rotate: the first in settings.TOKEN_PEPPERS signs new tokens, the others still verify older ones."""

import hashlib
import hmac
import secrets

from django.conf import settings

TOKEN_PREFIX = "hgr_"


def generate() -> tuple[str, str]:
    """Return (full token, display prefix). The full token is shown once and never stored."""
    ident = secrets.token_hex(4)
    token = f"{TOKEN_PREFIX}{ident}_{secrets.token_urlsafe(32)}"
    return token, f"{TOKEN_PREFIX}{ident}"


def digest(token: str, pepper_index: int = 0) -> str:
    pepper = settings.TOKEN_PEPPERS[pepper_index].encode()
    return hmac.new(pepper, token.encode(), hashlib.sha256).hexdigest()


def candidate_digests(token: str) -> list[tuple[int, str]]:
    return [(index, digest(token, index)) for index in range(len(settings.TOKEN_PEPPERS))]
