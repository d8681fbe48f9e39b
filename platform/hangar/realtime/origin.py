"""WebSocket Origin check that protects cookie sessions without locking out token clients.

Browsers always send `Origin`, and only browsers carry the session cookie, so a present Origin must be
one of ALLOWED_HOSTS (cross-site WebSocket hijacking defence). A client with no Origin at all is not a
browser: it cannot ride a victim's cookie and must authenticate with a token (realtime.auth)."""

from channels.security.websocket import AllowedHostsOriginValidator, OriginValidator


class BrowserOriginValidator(OriginValidator):
    def valid_origin(self, parsed_origin):
        if parsed_origin is None:
            return True
        return self.validate_origin(parsed_origin)


def origin_validated(application):
    allowed = AllowedHostsOriginValidator(application).allowed_origins
    return BrowserOriginValidator(application, allowed)
