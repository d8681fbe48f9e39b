"""Authentication by API token, without HTTP: find the usable token for a raw value, or refuse saying why
(hangar.errors.AuthenticationFailed, a 401 at the edges). The edges' DRF authenticators (Bearer, and Basic
whose password is a token) are hangar.drf_auth; the WebSocket middleware is hangar.realtime.auth."""

from django.utils import timezone

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken
from hangar.accounts.token_rows import Join, token_find
from hangar.accounts.token_services import token_record_use
from hangar.errors import AuthenticationFailed


def check_usable(found: ApiToken) -> None:
    """AuthenticationFailed saying why, unless the token (with .user loaded) may be used now."""
    if found.revoked_at is not None:
        raise AuthenticationFailed("Token has been revoked.")
    if found.expires_at is not None and found.expires_at <= timezone.now():
        raise AuthenticationFailed("Token has expired.")
    if not found.user.is_active:
        raise AuthenticationFailed("User is inactive.")


def resolve_token(raw: str, join: Join | None = None) -> ApiToken:
    """Find the usable token for `raw` or raise AuthenticationFailed saying why. The token comes with
    .user, .org and .membership (the user's in the token's org, or None), and `join`'s row if given."""
    if not raw.startswith(tokens.TOKEN_PREFIX):
        raise AuthenticationFailed("Invalid token.")
    # Match on the digest alone: after a rotation prepends a new pepper, the position a token was signed
    # at shifts, so a stored index cannot be trusted. Digests are unique; a cross-pepper collision is HMAC-hard.
    candidates = dict((digest, index) for index, digest in tokens.candidate_digests(raw))
    found = token_find(list(candidates), join)
    if found is None:
        raise AuthenticationFailed("Invalid token.")
    check_usable(found)
    token_record_use(token=found, raw=raw, signed_with_current=candidates[found.digest] == 0)
    return found


def requested_join(request) -> Join | None:
    """The row an edge wants loaded with the token, in the same query: it sets `request.token_join` before
    authentication runs (the OpenCode routes load the URL's project this way)."""
    return getattr(request, "token_join", None)
