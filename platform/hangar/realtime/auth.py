"""WebSocket authentication: a Django session cookie (the browser) or an API token.

A token may come as `?token=<token>` in the URL (browsers cannot set headers on WebSockets) or as an
`Authorization: Bearer <token>` header (server-side clients). We deliberately do not accept tokens in
`Sec-WebSocket-Protocol`: echoing a secret back as the chosen subprotocol is easy to get wrong.
A token is tried first; without one, the cookie session decides. A present but bad token does not fall
back to the cookie: the connection is anonymous and will be refused.

Sets `scope["user"]` (AnonymousUser when nothing valid) and `scope["token"]` (ApiToken or None). Consumers
then bind the connection to an org exactly like the HTTP API: a token only ever acts in its own org.
"""

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser
from rest_framework.exceptions import AuthenticationFailed

from hangar.accounts.authentication import resolve_token


def _raw_token(scope) -> str | None:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("token"):
        return query["token"][0]
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, rest = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and rest.strip():
                return rest.strip()
    return None


@database_sync_to_async
def _token_user(raw: str):
    try:
        token = resolve_token(raw)
    except AuthenticationFailed:
        return AnonymousUser(), None
    return token.user, token


class TokenAuthMiddleware:
    """Runs inside Channels' AuthMiddlewareStack, so the cookie user is already in the scope."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        scope = dict(scope)
        raw = _raw_token(scope)
        if raw is not None:
            scope["user"], scope["token"] = await _token_user(raw)
        else:
            scope["token"] = None
            # AuthMiddleware already resolved the cookie user behind a lazy wrapper; unwrap it so
            # consumers can hand it to sync code.
            user = scope.get("user")
            scope["user"] = getattr(user, "_wrapped", user) or AnonymousUser()
        return await self.inner(scope, receive, send)


def WebSocketAuthMiddleware(inner):
    return AuthMiddlewareStack(TokenAuthMiddleware(inner))
