"""`/ws/sessions/<session_id>/terminal/?cols=&rows=`: an interactive shell on the session sandbox's pty.

Same authentication as the event streams (cookie or token, hangar.realtime.auth) and the same refusal
before accept: 4401 no credentials, 4404 a session the caller cannot see (foreign or missing alike).
A shell can change the workspace, so it takes the member role (4403 for a viewer), and each opening is
audited. Output goes out as text frames; the client sends `{"type": "input", "data"}` and
`{"type": "resize", "cols", "rows"}` as JSON. The sandbox gets only what the agent's sandbox gets: no
secrets travel over this route.

The caller is checked again every `access.RECHECK_S` seconds, as the event streams are
(hangar.realtime.access): a member removed or made a viewer, a user deactivated, a token revoked or
expired loses the shell (close 4403 or 4401, the pty closed with the socket)."""

import asyncio
import json
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import transaction

from hangar.accounts.models import Role
from hangar.accounts.selectors import membership_for
from hangar.audit.services import audit_record
from hangar.logging import get_logger
from hangar.realtime import access
from hangar.realtime.consumers import (
    CLOSE_NOT_FOUND,
    CLOSE_UNAUTHENTICATED,
    NO_CHANNEL_LAYER,
    _actor,
    _visible_session,
)

log = get_logger(__name__)

CLOSE_FORBIDDEN = 4403
CLOSE_SANDBOX_FAILED = 4500
MAX_INPUT = 64 * 1024


def _bounded(query: dict, name: str, default: int, low: int, high: int) -> int:
    try:
        return max(low, min(high, int(query.get(name, [default])[0])))
    except ValueError:
        return default


@database_sync_to_async
def _may_drive(user, token, session) -> bool:
    # The session's org is the token's own (checked by _visible_session), so the user's membership there
    # is the one the token acts with.
    membership = membership_for(user, session.org_id)
    return membership is not None and membership.has_role(Role.MEMBER)


@database_sync_to_async
def _spec_and_audit(user, token, session):
    from hangar.engine.workspace.specs import spec_for

    with transaction.atomic():
        audit_record(
            actor=_actor(user, token, session.org_id), action="session.terminal.open", target=session
        )
    return spec_for(session)


def _open_pty(spec, cols: int, rows: int, on_output, on_exit):
    from hangar.engine.workspace.sandboxes import sandbox_without_pool

    return sandbox_without_pool(spec).open_pty(on_output, cols=cols, rows=rows, on_exit=on_exit)


class TerminalConsumer(AsyncWebsocketConsumer):
    channel_layer_alias = NO_CHANNEL_LAYER
    pty = None
    pump: asyncio.Task | None = None
    watcher: asyncio.Task | None = None

    async def connect(self):
        user = self.scope.get("user")
        token = self.scope.get("token")
        if user is None or not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        session = await _visible_session(user, token, self.scope["url_route"]["kwargs"]["session_id"])
        if session is None:
            return await self.close(code=CLOSE_NOT_FOUND)
        if not await _may_drive(user, token, session):
            return await self.close(code=CLOSE_FORBIDDEN)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        cols, rows = _bounded(query, "cols", 80, 10, 500), _bounded(query, "rows", 24, 4, 200)
        await self.start_shell(
            user, token, session, cols, rows, failure="[the sandbox could not start a shell]"
        )
        return None

    async def start_shell(self, user, token, session, cols: int, rows: int, *, failure: str = "") -> bool:
        """Audit, accept, open the shell and start pumping its output and re-checking the caller's access;
        False (the socket closed, `failure` told first when given) if the sandbox could not open it."""
        spec = await _spec_and_audit(user, token, session)
        await self.accept()
        loop = asyncio.get_running_loop()
        self.output: asyncio.Queue = asyncio.Queue()

        def deliver(item: str | None) -> None:  # from the pty's reader thread
            try:
                loop.call_soon_threadsafe(self.output.put_nowait, item)
            except RuntimeError:  # the socket's event loop is closed (its server stopped): no one to tell
                pass

        try:
            self.pty = await sync_to_async(_open_pty, thread_sensitive=False)(
                spec, cols, rows, deliver, lambda _code: deliver(None)
            )
        except Exception:
            log.exception("terminal_open_failed", session=session.pk)
            if failure:
                await self.send(text_data=f"\r\n{failure}\r\n")
            await self.close(code=CLOSE_SANDBOX_FAILED)
            return False
        self.pump = asyncio.ensure_future(self._pump())
        self.watcher = asyncio.ensure_future(self._watch(user, token, session))
        return True

    async def _watch(self, user, token, session) -> None:
        """Close the shell once its caller no longer may drive this session (the streams' re-check)."""
        while True:
            await asyncio.sleep(access.RECHECK_S)
            fresh_user, fresh_token, code = await database_sync_to_async(access.credentials_now)(user, token)
            if code is None:
                still = await _visible_session(fresh_user, fresh_token, session.pk)
                if still is None or not await _may_drive(fresh_user, fresh_token, still):
                    code = access.CLOSE_REVOKED
            if code is not None:
                log.info("terminal_access_revoked", session=session.pk, code=code)
                await self.close(code=code)
                await self._close_pty()
                return

    async def _pump(self) -> None:
        while True:
            data = await self.output.get()
            if data is None:
                await self.close(code=1000)
                return
            # Coalesce what is already queued: a burst of output is one frame, not hundreds.
            while not self.output.empty():
                more = self.output.get_nowait()
                if more is None:
                    self.output.put_nowait(None)
                    break
                data += more
            await self.send(text_data=data)

    async def receive(self, text_data=None, bytes_data=None):
        if self.pty is None or not text_data or len(text_data) > MAX_INPUT:
            return
        try:
            message = json.loads(text_data)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        if message.get("type") == "input" and isinstance(message.get("data"), str):
            await sync_to_async(self.pty.write, thread_sensitive=False)(message["data"])
        elif message.get("type") == "resize":
            query = {k: [message.get(k)] for k in ("cols", "rows")}
            cols, rows = _bounded(query, "cols", 80, 10, 500), _bounded(query, "rows", 24, 4, 200)
            await sync_to_async(self.pty.resize, thread_sensitive=False)(cols, rows)

    async def disconnect(self, code):
        for task in (self.pump, self.watcher):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        await self._close_pty()

    async def _close_pty(self) -> None:
        if self.pty is not None:
            pty, self.pty = self.pty, None
            await sync_to_async(pty.close, thread_sensitive=False)()
