"""An auditor reads the audit log and usage, not the org's sessions: the session and org streams refuse it
as they refuse someone outside the org (4404), while a colleague with a session role is let in."""

import pytest
from asgiref.sync import sync_to_async

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken, Membership, Role, User
from hangar.conversations.services import session_create
from tests.realtime.helpers import communicator

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


def auditor_token(org) -> str:
    user = User.objects.create_user("erin@acme.test", password="pw-erin")
    Membership.objects.create(org=org, user=user, role=Role.AUDITOR)
    raw, prefix = tokens.generate()
    ApiToken.objects.create(org=org, user=user, name="t", prefix=prefix, digest=tokens.digest(raw))
    return raw


async def refused_with(path: str, token: str) -> int | None:
    comm = communicator(path, token=token)
    connected, code = await comm.connect()
    if connected:
        await comm.disconnect()
    return None if connected else code


async def test_an_auditor_cannot_watch_sessions_or_the_org_stream(alice, bob):
    token = await sync_to_async(auditor_token)(alice.org)
    session = await sync_to_async(session_create)(actor=alice.actor, project=alice.project, title="s")
    assert await refused_with(f"/ws/sessions/{session.pk}/", token) == 4404
    assert await refused_with("/ws/orgs/acme/", token) == 4404
    assert await refused_with("/ws/orgs/acme/", bob.token) is None  # a member still may
