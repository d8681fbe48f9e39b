"""The edges' DRF authenticators (settings.REST_FRAMEWORK names them; the REST API and the OpenCode routes
share them): `Authorization: Bearer <token>`, or HTTP Basic whose password is an API token (OpenCode clients
send Basic). A wrong, expired or revoked token is a 401 with a clear body and the scheme's challenge. The
token itself is found and checked in hangar.accounts.authentication, which knows no HTTP. Also the
drf-spectacular descriptions of both schemes (registered when this module is imported: ApiConfig.ready)."""

import base64
import binascii

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from hangar import errors
from hangar.accounts.authentication import requested_join, resolve_token
from hangar.accounts.models import ApiToken


def _resolve(raw: str, request) -> ApiToken:
    try:
        return resolve_token(raw, requested_join(request))
    except errors.AuthenticationFailed as refused:
        # DRF's own exception: its Request answers it with the authenticator's challenge header.
        raise exceptions.AuthenticationFailed(refused.detail) from None


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        if not value.strip():
            raise exceptions.AuthenticationFailed("Empty bearer token.")
        token = _resolve(value.strip(), request)
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
        token = _resolve(password, request)
        return token.user, token

    def authenticate_header(self, request):
        return 'Basic realm="hangar"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "hangar.drf_auth.TokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "bearerFormat": "hgr_<id>_<secret>"}


class BasicTokenScheme(OpenApiAuthenticationExtension):
    target_class = "hangar.drf_auth.BasicTokenAuthentication"
    name = "basicToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "basic",
            "description": "Any username; the password is an API token.",
        }
