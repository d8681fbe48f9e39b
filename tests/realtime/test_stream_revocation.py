"""Open streams lose access with their caller: removing a member, revoking or expiring a token closes the
WebSocket streams (4403 / 4401) and ends the OpenCode SSE stream, at once on the change or within the
periodic re-check."""

import asyncio
import base64
import time

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient
from django.utils import timezone

from hangar.accounts.models import ApiToken
from hangar.accounts.services import member_remove
from hangar.accounts.token_services import token_revoke
from hangar.conversations.services import session_create
from tests.realtime.helpers import communicator
from tests.realtime.test_stream_access import cookie_for

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]
UNAUTHENTICATED, REVOKED = 4401, 4403  # hangar.realtime.access


@pytest_asyncio.fixture(autouse=True)
async def close_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


async def closed_within(comm, seconds: float) -> int:
    """The close code the server sends within `seconds` (frames before it are skipped)."""
    deadline = time.monotonic() + seconds
    while True:
        output = await comm.receive_output(timeout=max(0.01, deadline - time.monotonic()))
        if output["type"] == "websocket.close":
            return output["code"]


async def open_session_stream(persona, watcher, **auth):
    session = await sync_to_async(session_create)(actor=persona.actor, project=persona.project, title="s")
    comm = communicator(f"/ws/sessions/{session.pk}/", **auth)
    assert (await comm.connect())[0]
    await comm.receive_from(timeout=3)  # session.created
    return comm


async def test_removing_a_member_closes_their_session_stream_at_once(alice, bob):
    comm = await open_session_stream(alice, bob, cookie=await sync_to_async(cookie_for)(bob))
    await sync_to_async(member_remove)(actor=alice.actor, membership=bob.membership)
    assert await closed_within(comm, 5) == REVOKED


async def test_revoking_a_token_closes_the_org_stream_it_opened(alice, bob):
    comm = communicator("/ws/orgs/acme/", token=bob.token)
    assert (await comm.connect())[0]
    await sync_to_async(token_revoke)(actor=alice.actor, token=bob.token_row)
    assert await closed_within(comm, 5) == UNAUTHENTICATED


async def test_an_expired_token_is_noticed_by_the_periodic_recheck(alice, bob, monkeypatch):
    monkeypatch.setattr("hangar.realtime.access.RECHECK_S", 0.5)
    comm = await open_session_stream(alice, bob, token=bob.token)
    # No service runs, so no notice: only the periodic check can see it.
    await sync_to_async(ApiToken.objects.filter(pk=bob.token_row.pk).update)(expires_at=timezone.now())
    assert await closed_within(comm, 3) == UNAUTHENTICATED


async def test_another_members_removal_leaves_a_stream_open(alice, bob):
    comm = await open_session_stream(alice, alice, token=alice.token)
    await sync_to_async(member_remove)(actor=alice.actor, membership=bob.membership)
    assert await comm.receive_nothing(timeout=1.5)  # no frame, no close
    await comm.disconnect()


async def test_revoking_a_token_ends_its_opencode_event_stream(alice, bob):
    auth = {"Authorization": "Basic " + base64.b64encode(f"opencode:{bob.token}".encode()).decode()}
    response = await AsyncClient().get(f"/oc/{alice.project.pk}/event", headers=auth)
    assert response.status_code == 200
    stream = aiter(response.streaming_content)
    assert b"server.connected" in await asyncio.wait_for(anext(stream), 5)
    await sync_to_async(token_revoke)(actor=alice.actor, token=bob.token_row)

    async def until_end():
        async for _chunk in stream:
            pass

    try:
        await asyncio.wait_for(until_end(), 5)
    finally:
        await stream.aclose()
