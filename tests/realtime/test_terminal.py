"""/ws/sessions/<id>/terminal/: a shell on the session sandbox's pty, for members of the session's org
only; refused before accept otherwise (4401, 4404 for a foreign session, 4403 for a viewer)."""

import json

import pytest

from hangar.audit.models import AuditEvent
from hangar.conversations.services import session_create
from tests.foundation_fixtures import dave  # noqa: F401
from tests.realtime.helpers import communicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def alices_session(alice):
    session = session_create(actor=alice.actor, project=alice.project, title="t")
    yield session
    from hangar.engine.workspace.sandboxes import manager

    try:
        manager().destroy(session.pk)
    except Exception:
        pass


async def refused(path: str, **auth) -> int:
    comm = communicator(path, **auth)
    connected, code = await comm.connect(timeout=10)
    assert not connected
    return code


async def test_charlie_cannot_open_a_terminal_on_alices_session(alice, charlie, alices_session):
    path = f"/ws/sessions/{alices_session.pk}/terminal/"
    assert await refused(path, token=charlie.token) == 4404
    assert await refused(path) == 4401
    assert await refused("/ws/sessions/ses_nope/terminal/", token=alice.token) == 4404


async def test_a_viewer_cannot_open_a_terminal(dave, alices_session):  # noqa: F811
    assert await refused(f"/ws/sessions/{alices_session.pk}/terminal/", token=dave.token) == 4403


@pytest.mark.docker  # the terminal is a shell in the sandbox (tests/tiers.py)
async def test_alice_types_in_the_sandbox_shell_and_sees_the_output(alice, alices_session):
    comm = communicator(f"/ws/sessions/{alices_session.pk}/terminal/?cols=100&rows=30", token=alice.token)
    connected, _ = await comm.connect(timeout=60)
    assert connected
    await comm.send_to(text_data=json.dumps({"type": "resize", "cols": 120, "rows": 40}))
    await comm.send_to(text_data=json.dumps({"type": "input", "data": "echo hangar-$((6*7)); stty size\n"}))
    seen = ""
    while "hangar-42" not in seen or "40 120" not in seen:
        seen += await comm.receive_from(timeout=30)
    await comm.disconnect()
    assert await AuditEvent.objects.filter(
        action="session.terminal.open", target_id=alices_session.pk
    ).aexists()


@pytest.mark.docker  # the terminal is a shell in the sandbox (tests/tiers.py)
async def test_removing_a_member_closes_their_terminal_within_the_recheck(
    alice, bob, alices_session, monkeypatch
):
    from asgiref.sync import sync_to_async

    from hangar.accounts.services import member_remove
    from tests.realtime.test_stream_access import cookie_for
    from tests.realtime.test_stream_revocation import closed_within

    monkeypatch.setattr("hangar.realtime.access.RECHECK_S", 0.5)
    cookie = await sync_to_async(cookie_for)(bob)  # a browser's session: outlives the membership
    comm = communicator(f"/ws/sessions/{alices_session.pk}/terminal/", cookie=cookie)
    connected, _ = await comm.connect(timeout=60)
    assert connected
    await comm.send_to(text_data=json.dumps({"type": "input", "data": "echo still-$((6*7))\n"}))
    seen = ""
    while "still-42" not in seen:
        seen += await comm.receive_from(timeout=30)
    await sync_to_async(member_remove)(actor=alice.actor, membership=bob.membership)
    assert await closed_within(comm, 5) == 4403  # no longer a member: the shell goes with the socket
