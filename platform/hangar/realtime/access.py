"""Streams stay authorised only while their caller is: a WebSocket or SSE stream checks its credentials
again every RECHECK_S seconds and whenever the caller's access changes (accounts.signals.access_changed,
relayed here to the group `access.<org>.<user>` every stream of that person in that org joins). A stream
whose caller was removed from the org, whose token was revoked or expired, or whose user was deactivated
is closed: WebSocket close code 4401 (the credentials are no longer valid) or 4403 (they are, but no
longer grant this stream); an SSE stream ends."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.dispatch import receiver

from hangar.accounts.models import ApiToken, User
from hangar.accounts.selectors import token_usable, user_active
from hangar.accounts.signals import access_changed

ACCESS_CHANGED = "hangar.access.changed"  # event type of the notice; never forwarded to a client
RECHECK_S = settings.HANGAR_STREAM_RECHECK_S
CLOSE_UNAUTHENTICATED = 4401
CLOSE_REVOKED = 4403


def access_group(org_id: int, user_id: int) -> str:
    return f"access.{org_id}.{user_id}"


def credentials_now(user, token) -> tuple[User | None, ApiToken | None, int | None]:
    """The caller's user and token as the database has them now, or a close code if either is no longer
    usable (inactive user; revoked or expired token). Sync: call through database_sync_to_async."""
    fresh_user = user_active(user.pk)
    if fresh_user is None:
        return None, None, CLOSE_UNAUTHENTICATED
    if token is None:
        return fresh_user, None, None
    fresh_token = token_usable(token.pk)
    if fresh_token is None:
        return None, None, CLOSE_UNAUTHENTICATED
    return fresh_user, fresh_token, None


@receiver(access_changed)
def _tell_streams(sender, *, org_id: int, user_id: int, **_kwargs) -> None:
    from hangar.realtime.broadcast import broadcast

    notice: dict[str, Any] = {"seq": None, "type": ACCESS_CHANGED, "payload": {}, "session": None}

    broadcast([access_group(org_id, user_id)], notice)
