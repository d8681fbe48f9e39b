"""realtime.subscribe: what SSE views and blocking waits build on."""

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from hangar.conversations.events import project_group, publish
from hangar.conversations.services import session_create
from hangar.realtime.subscribe import stream_events, subscribe

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_an_event_published_right_after_subscribing_is_delivered(alice):
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project)
    async with subscribe([project_group(alice.project.pk)]) as sub:
        await sync_to_async(publish)(session, "test.tick", {"i": 1})
        event = await sub.get(timeout=3)
        if (
            event is not None and event["type"] == "session.created"
        ):  # sent in the background: it may land now
            event = await sub.get(timeout=3)
    assert event == {"seq": 2, "type": "test.tick", "payload": {"i": 1}, "session": session.pk}


async def test_get_returns_none_after_a_quiet_timeout_and_the_subscription_still_works(alice):
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project)
    async with subscribe([project_group(alice.project.pk)]) as sub:
        # The session's own session.created is published from a background sender and may still be on
        # its way: let it arrive (or not) before listening to the quiet.
        first = await sub.get(timeout=0.5)
        assert first is None or first["type"] == "session.created", first
        assert await sub.get(timeout=0.2) is None
        await sync_to_async(publish)(session, "test.tick", {"i": 2})
        assert (await sub.get(timeout=3))["payload"] == {"i": 2}


async def test_closing_stream_events_leaves_the_group_and_drops_the_channel(alice):
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project)
    group = project_group(alice.project.pk)
    events = stream_events([group])
    task = asyncio.ensure_future(events.__anext__())
    while not task.done():  # the generator subscribes lazily: publish until it is listening
        await sync_to_async(publish)(session, "test.tick", {"i": 3})
        await asyncio.wait([task], timeout=0.2)
    first = task.result()  # session.created may still have been on its way
    assert first["type"] == "test.tick" or (await events.__anext__())["type"] in (
        "test.tick",
        "session.created",
    )
    await events.aclose()
    layer = get_channel_layer()._get_layer()
    assert not any(group in name for name in layer.groups)
    # Only the process's standing channel is left (it keeps channels_redis' receiver listening).
    assert [name for name in layer.channels if "standing." not in name] == []
    assert len(layer.channels) == 1
