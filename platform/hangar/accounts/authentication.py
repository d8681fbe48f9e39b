"""DRF authentication by API token: `Authorization: Bearer <token>`, or HTTP Basic whose password is a
token (OpenCode clients send Basic). A wrong, expired or revoked token is a 401 with a clear body."""

import base64
import binascii

from django.utils import timezone
from rest_framework import authentication, exceptions

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken
from hangar.accounts.services import token_record_use
from hangar.accounts.token_rows import Join, token_find


def check_usable(found: ApiToken) -> None:
    """AuthenticationFailed saying why, unless the token (with .user loaded) may be used now."""
    if found.revoked_at is not None:
        raise exceptions.AuthenticationFailed("Token has been revoked.")
    if found.expires_at is not None and found.expires_at <= timezone.now():
        raise exceptions.AuthenticationFailed("Token has expired.")
    if not found.user.is_active:
        raise exceptions.AuthenticationFailed("User is inactive.")


def resolve_token(raw: str, join: Join | None = None) -> ApiToken:
    """Find the usable token for `raw` or raise AuthenticationFailed saying why. The token comes with
    .user, .org and .membership (the user's in the token's org, or None), and `join`'s row if given."""
    if not raw.startswith(tokens.TOKEN_PREFIX):
        raise exceptions.AuthenticationFailed("Invalid token.")
    # Match on the digest alone: after a rotation prepends a new pepper, the position a token was signed
    # at shifts, so a stored index cannot be trusted. Digests are unique; a cross-pepper collision is HMAC-hard.
    candidates = dict((digest, index) for index, digest in tokens.candidate_digests(raw))
    found = token_find(list(candidates), join)
    if found is None:
        raise exceptions.AuthenticationFailed("Invalid token.")
    check_usable(found)
    token_record_use(token=found, raw=raw, signed_with_current=candidates[found.digest] == 0)
    return found


def requested_join(request) -> Join | None:
    """The row an edge wants loaded with the token, in the same query: it sets `request.token_join` before
    authentication runs (the OpenCode routes load the URL's project this way)."""
    return getattr(request, "token_join", None)


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        if not value.strip():
            raise exceptions.AuthenticationFailed("Empty bearer token.")
        token = resolve_token(value.strip(), requested_join(request))
        return token.user, token

    def authenticate_header(self, request):
        return 'Bearer realm="hangar"'


class BasicTokenAuthentication(authentication.BaseAuthentication):
    """HTTP Basic where the password is an API token; the username is ignored (OpenCode sends `opencode`)."""

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            _, _, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise exceptions.AuthenticationFailed("Malformed Basic credentials.") from exc
        token = resolve_token(password, requested_join(request))
        return token.user, token

    def authenticate_header(self, request):
        return 'Basic realm="hangar"'
