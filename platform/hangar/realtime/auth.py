"""WebSocket authentication: a Django session cookie (the browser), a ticket, or an API token.

A token comes only as an `Authorization: Bearer <token>` header (server-side clients). A client that cannot
set headers (a browser) opens the socket with `?ticket=<ticket>`, which it got from `POST /api/auth/ws-ticket`
(hangar.accounts.ws_tickets: one use, seconds long, acting as the token or session that asked for it). A
token in the URL (`?token=`) is refused: proxies, access logs and history keep URLs. We deliberately do not
accept tokens in `Sec-WebSocket-Protocol`: echoing a secret back as the chosen subprotocol is easy to get wrong.
A ticket or token is tried first; without one, the cookie session decides. A present but bad one does not
fall back to the cookie: the connection is anonymous and will be refused.

Sets `scope["user"]` (AnonymousUser when nothing valid) and `scope["token"]` (ApiToken or None). Consumers
then bind the connection to an org exactly like the HTTP API: a token only ever acts in its own org.
"""

from urllib.parse import parse_qs

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from hangar.accounts.authentication import check_usable, resolve_token
from hangar.accounts.token_rows import token_find
from hangar.accounts.ws_tickets import ticket_redeem
from hangar.errors import AuthenticationFailed


def _query(scope) -> dict[str, list[str]]:
    return parse_qs(scope.get("query_string", b"").decode("latin-1"))


def _raw_token(scope) -> str | None:
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


@database_sync_to_async
def _ticket_user(raw: str):
    redeemed = ticket_redeem(raw)
    if redeemed is None:
        return AnonymousUser(), None
    user, digest = redeemed
    if digest is None:  # a browser session's ticket
        return user, None
    token = token_find([digest])
    if token is None or token.user_id != user.pk:
        return AnonymousUser(), None
    try:
        check_usable(token)
    except AuthenticationFailed:
        return AnonymousUser(), None
    return token.user, token


class TokenAuthMiddleware:
    """Runs inside Channels' AuthMiddlewareStack, so the cookie user is already in the scope."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        scope = dict(scope)
        query = _query(scope)
        raw = _raw_token(scope)
        if "token" in query:  # never in the URL: refused outright, whatever else came
            scope["user"], scope["token"] = AnonymousUser(), None
        elif query.get("ticket"):
            scope["user"], scope["token"] = await _ticket_user(query["ticket"][0])
        elif raw is not None:
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
