"""Low: a long-lived API token no longer rides in a WebSocket URL (`?token=`), where proxies, access logs and
browser history keep it. A client that cannot set headers asks `POST /api/auth/ws-ticket` (with its token
or its browser session) for a ticket: random, good for one connection, for HANGAR_WS_TICKET_TTL_S seconds,
acting exactly as the credential that asked for it. Server-side clients still send `Authorization: Bearer`."""

import hashlib

import pytest
import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.test import Client
from rest_framework.test import APIClient

from hangar.accounts.token_services import token_revoke
from tests.realtime.helpers import ORIGIN, communicator
from tests.realtime.test_stream_access import assert_refused, first_frame, new_session

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

TICKETS = "/api/auth/ws-ticket"


def ticket_for(persona) -> str:
    answer = APIClient().post(TICKETS, HTTP_AUTHORIZATION=f"Bearer {persona.token}")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["ticket"] and 0 < body["expires_in"] <= 60
    return body["ticket"]


def url(path: str, **query: str) -> str:
    from urllib.parse import urlencode

    return f"{path}?{urlencode(query)}"


async def test_a_token_in_the_websocket_url_is_refused(alice):
    session = await sync_to_async(new_session)(alice)
    from channels.testing import WebsocketCommunicator

    from hangar.asgi import application

    comm = WebsocketCommunicator(
        application, url(f"/ws/sessions/{session.pk}/", token=alice.token), headers=[ORIGIN]
    )
    assert (await comm.connect()) == (False, 4401)


async def test_a_ticket_opens_one_stream_once(alice):
    session = await sync_to_async(new_session)(alice)
    ticket = await sync_to_async(ticket_for)(alice)
    comm = communicator(url(f"/ws/sessions/{session.pk}/", ticket=ticket))
    assert (await comm.connect())[0]
    assert (await first_frame(comm))["seq"] == 1
    await comm.disconnect()
    await assert_refused(communicator(url(f"/ws/sessions/{session.pk}/", ticket=ticket)), 4401)


async def test_a_ticket_lives_seconds_and_is_stored_only_as_a_digest(alice):
    ticket = await sync_to_async(ticket_for)(alice)
    client = redis.Redis.from_url(settings.REDIS_URL)
    keys = [key.decode() for key in client.scan_iter("hangar:*ws_ticket_*")]
    digest = hashlib.sha256(ticket.encode()).hexdigest()
    [key] = [key for key in keys if digest in key]
    assert ticket not in key and 0 < client.ttl(key) <= settings.HANGAR_WS_TICKET_TTL_S


async def test_a_ticket_acts_as_its_token_and_dies_with_it(alice, charlie):
    session = await sync_to_async(new_session)(alice)
    foreign = await sync_to_async(ticket_for)(charlie)
    await assert_refused(communicator(url(f"/ws/sessions/{session.pk}/", ticket=foreign)), 4404)
    ticket = await sync_to_async(ticket_for)(alice)
    await sync_to_async(token_revoke)(actor=alice.actor, token=alice.token_row)
    await assert_refused(communicator(url(f"/ws/sessions/{session.pk}/", ticket=ticket)), 4401)


async def test_a_browser_session_gets_a_ticket_for_its_user(alice, charlie):
    session = await sync_to_async(new_session)(alice)

    def browser_ticket(persona) -> str:
        browser = Client(enforce_csrf_checks=True)
        browser.force_login(persona.user)
        browser.get("/api/auth/csrf")
        csrf = browser.cookies[settings.CSRF_COOKIE_NAME].value
        answer = browser.post(TICKETS, HTTP_X_CSRFTOKEN=csrf)
        assert answer.status_code == 201, answer.content
        return answer.json()["ticket"]

    comm = communicator(url(f"/ws/sessions/{session.pk}/", ticket=await sync_to_async(browser_ticket)(alice)))
    assert (await comm.connect())[0]
    await comm.disconnect()
    charlies = await sync_to_async(browser_ticket)(charlie)
    await assert_refused(communicator(url(f"/ws/sessions/{session.pk}/", ticket=charlies)), 4404)


async def test_no_ticket_without_credentials(db):
    assert (await sync_to_async(lambda: APIClient().post(TICKETS).status_code)()) in (401, 403)
    await assert_refused(communicator(url("/ws/sessions/ses_x/", ticket="wst_forged")), 4401)
