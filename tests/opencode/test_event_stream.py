"""GET /event: an SSE stream that opens with `server.connected` and then carries the project's events in
OpenCode's envelope, and nothing of another org's projects."""

import asyncio
import json

import pytest
import pytest_asyncio
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from hangar.conversations.events import publish_ephemeral
from hangar.conversations.services import message_create, part_upsert, session_create, todos_replace
from tests.opencode.conftest import assert_matches, base_url, response_schema

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest_asyncio.fixture(autouse=True)
async def close_thread_connections():
    """sync_to_async runs the ORM in a helper thread whose connection would outlive the test DB."""
    yield
    from django.db import connections

    await sync_to_async(connections.close_all)()


EVENT_SCHEMA = response_schema("/event", "get")


def basic(persona) -> dict:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"opencode:{persona.token}".encode()).decode()}


async def read_events(stream, count: int, timeout: float = 10.0) -> list[dict]:
    """The next `count` data events (keepalive comments skipped), each validated against OpenCode's Event."""
    events: list[dict] = []
    buffer = b""

    async def pump():
        nonlocal buffer
        async for chunk in stream:
            buffer += chunk
            while b"\n\n" in buffer:
                frame, buffer = buffer.split(b"\n\n", 1)
                if frame.startswith(b"data: "):
                    events.append(json.loads(frame[6:]))
                    if len(events) >= count:
                        return

    await asyncio.wait_for(pump(), timeout)
    for event in events:
        assert_matches(event, EVENT_SCHEMA)
    return events


async def open_stream(persona, project_persona):
    response = await AsyncClient().get(f"{base_url(project_persona)}/event", headers=basic(persona))
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    return response, aiter(response.streaming_content)


async def test_it_starts_with_server_connected_then_carries_published_events(alice):
    _response, stream = await open_stream(alice, alice)
    try:
        [connected] = await read_events(stream, 1)
        assert connected["type"] == "server.connected" and connected["properties"] == {}
        session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project, title="live")
        message = await sync_to_async(message_create)(
            session=session,
            data={
                "role": "user",
                "time": {"created": 1},
                "agent": "build",
                "model": {"providerID": "p", "modelID": "m"},
            },
        )
        part = await sync_to_async(part_upsert)(message=message, data={"type": "text", "text": "hel"})
        await sync_to_async(publish_ephemeral)(
            session, "message.part.updated", {"part": part.data, "delta": "lo"}
        )
        await sync_to_async(todos_replace)(session=session, todos=[{"content": "ship it"}])
        events = await read_events(stream, 5)
    finally:
        await stream.aclose()
    assert [e["type"] for e in events] == [
        "session.created",
        "message.updated",
        "message.part.updated",
        "message.part.delta",
        "todo.updated",
    ]
    created, updated, part_updated, delta, todo = events
    assert created["properties"]["sessionID"] == session.pk
    assert updated["properties"]["info"]["id"] == message.pk
    assert part_updated["properties"]["part"]["text"] == "hel"
    assert delta["properties"] == {
        "sessionID": session.pk,
        "messageID": message.pk,
        "partID": part.pk,
        "field": "text",
        "delta": "lo",
    }
    assert todo["properties"]["todos"][0]["content"] == "ship it"


async def test_a_member_sees_the_projects_events_and_another_org_sees_none_of_them(alice, bob, charlie):
    _, bobs = await open_stream(bob, alice)
    _, charlies = await open_stream(charlie, charlie)
    try:
        await read_events(bobs, 1)
        await read_events(charlies, 1)
        await sync_to_async(session_create)(actor=alice.actor, project=alice.project, title="secret")
        await sync_to_async(session_create)(actor=charlie.actor, project=charlie.project, title="his")
        [seen_by_bob] = await read_events(bobs, 1)
        [seen_by_charlie] = await read_events(charlies, 1)
    finally:
        await bobs.aclose()
        await charlies.aclose()
    assert seen_by_bob["properties"]["info"]["title"] == "secret"
    assert seen_by_charlie["properties"]["info"]["title"] == "his"
