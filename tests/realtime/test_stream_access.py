"""Who may open which stream: cookie and token auth, cross-tenant refusal, and the org stream."""

import json

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import Client

from hangar.conversations.services import session_create
from hangar.conversations.session_services import session_delete, session_update
from tests.realtime.helpers import communicator

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def new_session(persona, title="s"):
    return session_create(actor=persona.actor, project=persona.project, title=title)


def cookie_for(persona) -> str:
    client = Client()
    client.force_login(persona.user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


async def assert_refused(comm, code: int) -> None:
    connected, close_code = await comm.connect()
    assert (connected, close_code) == (False, code)


async def first_frame(comm) -> dict:
    return json.loads(await comm.receive_from(timeout=3))


async def test_a_bearer_header_opens_the_session_stream(alice):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/", header_token=alice.token)
    assert (await comm.connect())[0]
    assert (await first_frame(comm))["type"] == "session.created"
    await comm.disconnect()


async def test_a_browser_session_cookie_opens_the_session_stream(alice):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/", cookie=await sync_to_async(cookie_for)(alice))
    assert (await comm.connect())[0]
    assert (await first_frame(comm))["payload"]["info"]["id"] == session.pk
    await comm.disconnect()


async def test_a_member_of_the_same_org_may_watch_a_colleagues_session(alice, bob):
    session = await sync_to_async(new_session)(alice)
    comm = communicator(f"/ws/sessions/{session.pk}/", token=bob.token)
    assert (await comm.connect())[0]
    assert (await first_frame(comm))["seq"] == 1
    await comm.disconnect()


async def test_anonymous_and_bad_tokens_are_refused_with_4401(alice):
    session = await sync_to_async(new_session)(alice)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/"), 4401)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/", token="hgr_nope_nope"), 4401)
    await assert_refused(communicator("/ws/orgs/acme/"), 4401)


async def test_charlie_cannot_subscribe_to_alices_session(alice, charlie):
    session = await sync_to_async(new_session)(alice)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/", token=charlie.token), 4404)
    cookie = await sync_to_async(cookie_for)(charlie)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/", cookie=cookie), 4404)


async def test_a_missing_session_looks_the_same_as_a_foreign_one(alice):
    await assert_refused(communicator("/ws/sessions/ses_doesnotexist/", token=alice.token), 4404)


async def test_a_malformed_after_is_refused_with_4400(alice):
    session = await sync_to_async(new_session)(alice)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/?after=-1", token=alice.token), 4400)
    await assert_refused(communicator(f"/ws/sessions/{session.pk}/?after=x", token=alice.token), 4400)


async def test_charlie_cannot_subscribe_to_acmes_org_stream(alice, charlie):
    await assert_refused(communicator("/ws/orgs/acme/", token=charlie.token), 4404)
    await assert_refused(communicator("/ws/orgs/nowhere/", token=charlie.token), 4404)


async def test_the_org_stream_tells_members_of_session_created_updated_and_deleted(alice, bob):
    comm = communicator("/ws/orgs/acme/", token=bob.token)
    assert (await comm.connect())[0]
    session = await sync_to_async(new_session)(alice, "first")
    await sync_to_async(session_update)(actor=alice.actor, session=session, title="renamed")
    await sync_to_async(session_delete)(actor=alice.actor, session=session)
    frames = [await first_frame(comm) for _ in range(3)]
    assert [f["type"] for f in frames] == ["session.created", "session.updated", "session.deleted"]
    assert {f["session"] for f in frames} == {session.pk}
    assert frames[1]["payload"]["info"]["title"] == "renamed"
    await comm.disconnect()


async def test_the_org_stream_carries_nothing_from_another_org(alice, charlie):
    comm = communicator("/ws/orgs/globex/", token=charlie.token)
    assert (await comm.connect())[0]
    await sync_to_async(new_session)(alice, "acme only")
    assert await comm.receive_nothing(0.5)
    mine = await sync_to_async(new_session)(charlie, "globex")
    assert (await first_frame(comm))["session"] == mine.pk
    await comm.disconnect()
