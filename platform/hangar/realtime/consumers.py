"""Live streams over WebSocket.

`/ws/sessions/<session_id>/?after=<seq>`: every stored event of the session with seq > after, exactly once
and in order, then live events. `/ws/orgs/<org_slug>/`: session-list changes of the org (events published
with `org_wide=True`: session.created/updated/deleted/status), live only.

Frames are JSON `{"seq", "type", "payload", "session"}`; ephemeral ones (token deltas) carry `"seq": null,
"ephemeral": true` and are never stored, so a client must not advance its cursor on them.

Refusals happen before accept, so the HTTP upgrade itself fails: 4401 no valid credentials, 4404 the
session or org does not exist or belongs to an org the caller cannot see (indistinguishable on purpose),
4400 a malformed `after`. After a session is deleted its stream sends `session.deleted` and closes with 4410.
An open stream is re-authorised every few seconds and on access changes (hangar.realtime.access): 4401 when
its credentials stopped being valid, 4403 when they no longer grant the stream (membership removed).

How "no gap, no duplicate" holds (see `SessionStreamConsumer._run`):
1. Subscribe to the session group first, and wait for the subscription barrier (hangar.realtime.subscribe),
   before accepting: from then on every broadcast reaches our local queue, which buffers it while we replay.
2. Replay from Postgres (seq > after), remembering the last seq sent.
3. Drain the queue: skip seq <= last; send seq == last + 1; on seq > last + 1 a notification was lost
   (the channel layer is not durable), so read the gap from Postgres first. Seqs are dense and commit in
   order (publish takes them under the session row lock), so the gap is always in the database.
4. If nothing arrives for IDLE_RECHECK seconds, look in Postgres anyway: this catches a lost notification
   for the *last* event, which no later event would reveal.
"""

import asyncio
import json
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from hangar.accounts.actors import Actor
from hangar.accounts.models import ApiToken, Org, Role
from hangar.accounts.selectors import membership_in
from hangar.audit.models import ActorType
from hangar.conversations import selectors
from hangar.conversations.events import org_group, session_group
from hangar.conversations.models import Session
from hangar.logging import get_logger
from hangar.realtime import access
from hangar.realtime.subscribe import Subscription, subscribe

log = get_logger(__name__)

NO_CHANNEL_LAYER = "hangar.own-subscription"  # not configured → the consumer gets no built-in channel
REPLAY_BATCH = 500
IDLE_RECHECK = 15.0

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404
CLOSE_GONE = 4410


def _actor(user, token: ApiToken | None, org_id: int) -> Actor:
    return Actor(
        type=ActorType.TOKEN if token else ActorType.USER,
        org_id=org_id,
        user=user,
        token=token,
        label=token.prefix if token else getattr(user, "email", ""),
    )


@database_sync_to_async
def _visible_session(user, token, session_id: str) -> Session | None:
    org_id = token.org_id if token else selectors.session_org_id(session_id)
    if org_id is None:
        return None
    try:
        return selectors.session_get(_actor(user, token, org_id), session_id)
    except Session.DoesNotExist:
        return None


@database_sync_to_async
def _visible_org(user, token, slug: str) -> Org | None:
    membership = membership_in(user, slug)
    if membership is None or (token is not None and token.org_id != membership.org_id):
        return None
    if membership.role == Role.AUDITOR:  # reads the audit log and usage only, not the org's sessions
        return None
    return membership.org


class _StreamClosed(Exception):
    """The stream closed itself mid-way (its replay reached purged events): the runner just ends."""


class _StreamConsumer(AsyncWebsocketConsumer):
    # We run our own Subscription (barrier + buffering queue) instead of the consumer's built-in channel.
    channel_layer_alias = NO_CHANNEL_LAYER

    runner: asyncio.Task | None = None
    watcher: asyncio.Task | None = None
    subscription: Subscription | None = None

    async def open_then_accept(self, groups: list[str], org_id: int) -> None:
        """Subscribe (barrier included) before accepting: once a client sees the connection open, no
        broadcast can be missed, ephemeral ones included. The caller's access notices come too."""
        self.subscription = subscribe([*groups, access.access_group(org_id, self.scope["user"].pk)])
        await self.subscription.open()
        await self.accept()

    async def visible(self, user, token) -> bool:
        """Whether (fresh) `user`/`token` may still watch this stream."""
        raise NotImplementedError

    async def close_if_denied(self) -> bool:
        """Check the caller again (hangar.realtime.access); close the stream if it lost access."""
        user, token = self.caller()
        user, token, code = await database_sync_to_async(access.credentials_now)(user, token)
        if code is None and not await self.visible(user, token):
            code = access.CLOSE_REVOKED
        if code is None:
            return False
        log.info("stream_access_revoked", path=self.scope.get("path"), code=code)
        await self.close(code=code)
        return True

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(access.RECHECK_S)
            if await self.close_if_denied():
                if self.runner is not None:
                    self.runner.cancel()
                return

    def caller(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            return None, None
        return user, self.scope.get("token")

    def start(self, coro) -> None:
        self.runner = asyncio.ensure_future(coro)
        self.runner.add_done_callback(self._runner_done)
        self.watcher = asyncio.ensure_future(self._watch())

    def _runner_done(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("stream_failed", path=self.scope.get("path"), exc_info=task.exception())
            # Held on the consumer: the loop keeps only a weak reference to a task.
            self.closing = asyncio.ensure_future(self.close(code=1011))

    async def disconnect(self, code):
        for task in (self.watcher, self.runner):
            if task is not None:
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass
        if self.subscription is not None:
            await self.subscription.close()

    async def receive(self, text_data=None, bytes_data=None):
        pass  # the streams are one-way; clients reconnect with ?after= to resume

    async def send_frame(self, frame: dict) -> None:
        await self.send(text_data=json.dumps(frame, separators=(",", ":")))


class SessionStreamConsumer(_StreamConsumer):
    async def connect(self):
        user, token = self.caller()
        if user is None:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            after = int(query.get("after", ["0"])[0])
            if after < 0:
                raise ValueError
        except ValueError:
            return await self.close(code=CLOSE_BAD_REQUEST)
        session = await _visible_session(user, token, self.scope["url_route"]["kwargs"]["session_id"])
        if session is None:
            return await self.close(code=CLOSE_NOT_FOUND)
        self.session_id = session.pk
        self.last = after
        await self.open_then_accept([session_group(session.pk)], session.org_id)
        self.start(self._run())
        return None

    async def visible(self, user, token) -> bool:
        return await _visible_session(user, token, self.session_id) is not None

    async def _run(self) -> None:
        try:
            await self._stream()
        except _StreamClosed:
            return

    async def _stream(self) -> None:
        subscription = self.subscription
        assert subscription is not None, "open_then_accept opens it before the run starts"
        await self._fill()
        while True:
            event = await subscription.get(timeout=IDLE_RECHECK)
            if event is None:
                await self._fill()
                continue
            if event.get("type") == access.ACCESS_CHANGED:
                if await self.close_if_denied():
                    return
                continue
            await self._deliver(event)
            if event.get("type") == "session.deleted":
                await self.close(code=CLOSE_GONE)
                return

    async def _deliver(self, event: dict) -> None:
        seq = event.get("seq")
        if seq is None:  # ephemeral: forwarded as-is, no cursor
            await self.send_frame(event)
            return
        if seq <= self.last:
            return  # already sent by the replay or a gap fill
        if seq > self.last + 1:
            await self._fill()
        if seq > self.last:  # only when the rows are gone (the session was just deleted)
            await self.send_frame(event)
            self.last = seq

    async def _fill(self) -> None:
        """Send every stored event after `self.last`, in batches. If the retention purge deleted some of
        them, the client is told (a `stream.events_purged` frame) and the stream closes with CLOSE_GONE:
        it must reload the session and reconnect from `last_seq`, never continue over a gap."""
        while True:
            try:
                events = await database_sync_to_async(selectors.events_after)(
                    self.session_id, self.last, REPLAY_BATCH
                )
            except selectors.EventsPurged as purged:
                payload = {"purged_through": purged.purged_through, "last_seq": purged.last_seq}
                await self.send_frame({"type": "stream.events_purged", "payload": payload})
                await self.close(code=CLOSE_GONE)
                raise _StreamClosed from None
            for event in events:
                await self.send_frame(event)
                self.last = event["seq"]
            if len(events) < REPLAY_BATCH:
                return


class OrgStreamConsumer(_StreamConsumer):
    async def connect(self):
        user, token = self.caller()
        if user is None:
            return await self.close(code=CLOSE_UNAUTHENTICATED)
        org = await _visible_org(user, token, self.scope["url_route"]["kwargs"]["org_slug"])
        if org is None:
            return await self.close(code=CLOSE_NOT_FOUND)
        self.slug = org.slug
        await self.open_then_accept([org_group(org.pk)], org.pk)
        self.start(self._run())
        return None

    async def visible(self, user, token) -> bool:
        return await _visible_org(user, token, self.slug) is not None

    async def _run(self) -> None:
        subscription = self.subscription
        assert subscription is not None, "open_then_accept opens it before the run starts"
        async for event in subscription:
            if event.get("type") == access.ACCESS_CHANGED:
                if await self.close_if_denied():
                    return
                continue
            await self.send_frame(event)
