"""The Origin rule: a browser's Origin must be ours (cookie hijacking defence); a token client that
sends no Origin at all is not a browser and is admitted on its token."""

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from hangar.asgi import application
from hangar.conversations.services import session_create

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_a_token_client_without_origin_is_admitted(alice):
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project)
    comm = WebsocketCommunicator(
        application,
        f"/ws/sessions/{session.pk}/",
        headers=[(b"authorization", f"Bearer {alice.token}".encode())],
    )
    connected, _ = await comm.connect()
    assert connected
    frame = json.loads(await comm.receive_from(timeout=3))
    assert frame["type"] == "session.created"
    assert frame["payload"]["sessionID"] == session.pk
    await comm.disconnect()


async def test_a_foreign_origin_is_refused_even_with_a_valid_token(alice):
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project)
    comm = WebsocketCommunicator(
        application,
        f"/ws/sessions/{session.pk}/",
        headers=[(b"origin", b"https://evil.example"), (b"authorization", f"Bearer {alice.token}".encode())],
    )
    connected, _ = await comm.connect()
    assert not connected
