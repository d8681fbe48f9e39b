"""`/oc/<project>/pty/<pty id>/connect`: the WebSocket of an OpenCode Pty (views_pty). The shell is the web
app's terminal (hangar.realtime.terminal: same authentication, refusal codes, member role, audit and
access re-check); what differs is OpenCode's framing: every text frame the client sends is input, the
output goes out as text frames, and the size comes from the Pty record (`PUT /pty/{id}`), followed while
the socket is open. Deleting the Pty closes its socket. `cursor` is accepted and ignored: a shell here
lives only as long as its socket, so there is nothing earlier to replay."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async

from hangar.opencode.scope import project_pk
from hangar.opencode.views_pty import record_get
from hangar.realtime.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED, _visible_session
from hangar.realtime.terminal import (
    CLOSE_FORBIDDEN,
    MAX_INPUT,
    TerminalConsumer,
    _may_drive,
)

FOLLOW_S = 0.5


class PtyConsumer(TerminalConsumer):
    follower: asyncio.Task | None = None

    async def connect(self):
        user, token = self.scope.get("user"), self.scope.get("token")
        if user is None or not user.is_authenticated:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        kwargs = self.scope["url_route"]["kwargs"]
        project_id, pty_id = project_pk(kwargs["project_id"]), kwargs["pty_id"]
        record = await sync_to_async(record_get)(pty_id, project_id=project_id, user_id=user.pk)
        session = await _visible_session(user, token, record["session"]) if record else None
        if record is None or session is None or session.project_id != project_id:
            return await self.close(code=CLOSE_NOT_FOUND)
        if not await _may_drive(user, token, session):
            return await self.close(code=CLOSE_FORBIDDEN)
        if not await self.start_shell(user, token, session, record["cols"], record["rows"]):
            return None
        self.follower = asyncio.ensure_future(self._follow(pty_id, project_id, user.pk, record))
        return None

    async def _follow(self, pty_id: str, project_id: int | None, user_id: int, record: dict) -> None:
        """Resize with the record; close once the Pty is deleted."""
        size = (record["cols"], record["rows"])
        while True:
            await asyncio.sleep(FOLLOW_S)
            now = await sync_to_async(record_get)(pty_id, project_id=project_id, user_id=user_id)
            if now is None:
                await self.close(code=1000)
                await self._close_pty()
                return
            if (now["cols"], now["rows"]) != size and self.pty is not None:
                size = (now["cols"], now["rows"])
                await sync_to_async(self.pty.resize, thread_sensitive=False)(*size)

    async def receive(self, text_data=None, bytes_data=None):
        data = text_data if text_data is not None else (bytes_data or b"").decode("utf-8", "replace")
        if self.pty is None or not data or len(data) > MAX_INPUT:
            return
        await sync_to_async(self.pty.write, thread_sensitive=False)(data)

    async def disconnect(self, code):
        if self.follower is not None and self.follower is not asyncio.current_task():
            self.follower.cancel()
        await super().disconnect(code)
