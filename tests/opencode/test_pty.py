"""OpenCode's /pty family over a session's sandbox: shells, create, list, get, resize and rename, delete,
a connect ticket, and the WebSocket a client types into (the web app's terminal underneath). A Pty is its
creator's: another member, a viewer creating one, or another org are refused (404, 403, 404)."""

import pytest
from asgiref.sync import sync_to_async

from hangar.accounts.models import Role
from hangar.audit.models import AuditEvent
from hangar.conversations.services import session_create
from tests.conftest import make_persona
from tests.opencode.conftest import assert_response, base_url
from tests.realtime.helpers import communicator


@pytest.fixture
def session(alice):
    made = session_create(actor=alice.actor, project=alice.project, title="t")
    yield made
    from hangar.engine.workspace.sandboxes import manager

    try:
        manager().destroy(made.pk)
    except Exception:
        pass


def create(oc, persona, session, **body):
    return oc(persona).post(f"{base_url(persona)}/pty?session={session.pk}", body, format="json")


@pytest.mark.django_db
def test_a_pty_is_created_listed_resized_and_deleted_in_opencodes_shapes(oc, alice, session):
    base = base_url(alice)
    shells = oc(alice).get(f"{base}/pty/shells")
    assert_response(shells, "/pty/shells")
    made = create(oc, alice, session, title="build")
    assert_response(made, "/pty", "post")
    pty = made.json()
    assert pty["title"] == "build" and pty["cwd"] == "/workspace" and pty["status"] == "running"
    listed = oc(alice).get(f"{base}/pty")
    assert_response(listed, "/pty")
    assert [p["id"] for p in listed.json()] == [pty["id"]]
    url = f"{base}/pty/{pty['id']}"
    assert_response(oc(alice).get(url), "/pty/{ptyID}")
    resized = oc(alice).put(url, {"title": "tests", "size": {"rows": 40, "cols": 120}}, format="json")
    assert_response(resized, "/pty/{ptyID}", "put")
    assert resized.json()["title"] == "tests"
    token = oc(alice).post(f"{url}/connect-token")
    assert_response(token, "/pty/{ptyID}/connect-token", "post")
    assert token.json()["expires_in"] > 0
    assert oc(alice).delete(url).json() is True
    assert oc(alice).get(url).status_code == 404 and oc(alice).get(f"{base}/pty").json() == []


@pytest.mark.django_db
def test_what_a_sandbox_shell_cannot_take_is_a_400_naming_the_field(oc, alice, session):
    for body, field in (
        ({"command": "/usr/bin/python3"}, "command"),
        ({"cwd": "/etc"}, "cwd"),
        ({"env": {"AWS_SECRET": "x"}}, "env"),
        ({"args": ["-c", "id"]}, "args"),
        ({"shell": "zsh"}, "shell"),
    ):
        refused = create(oc, alice, session, **body)
        assert refused.status_code == 400 and field in refused.json()["data"]["errors"], body
    assert oc(alice).get(f"{base_url(alice)}/pty").json() == []


@pytest.mark.django_db
def test_a_pty_is_its_creators_and_another_org_cannot_reach_it(oc, alice, bob, charlie, acme, session):
    pty = create(oc, alice, session).json()
    url = f"{base_url(alice)}/pty/{pty['id']}"
    for persona in (bob, charlie):  # bob: same org, not his shell; charlie: another org
        assert oc(persona).get(url).status_code == 404
        assert oc(persona).put(url, {"title": "mine"}, format="json").status_code == 404
        assert oc(persona).delete(url).status_code == 404
        assert oc(persona).post(f"{url}/connect-token").status_code == 404
    assert oc(bob).get(f"{base_url(alice)}/pty").json() == []
    assert oc(charlie).get(f"{base_url(alice)}/pty").status_code == 404
    assert oc(charlie).get(f"{base_url(charlie)}/pty/{pty['id']}").status_code == 404
    # charlie cannot open one on alice's session from his own project either
    assert create(oc, charlie, session).status_code == 404
    viewer = make_persona("vera@acme.test", acme, Role.VIEWER, "rocket")
    assert create(oc, viewer, session).status_code == 403
    assert oc(alice).get(url).status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
@pytest.mark.docker  # the socket runs a shell in the sandbox (tests/tiers.py)
async def test_a_client_types_into_the_pty_socket_and_another_cannot_connect(oc, alice, charlie, session):
    pty = (await sync_to_async(create)(oc, alice, session)).json()
    url = f"{base_url(alice)}/pty/{pty['id']}"
    await sync_to_async(oc(alice).put)(url, {"size": {"rows": 33, "cols": 99}}, format="json")
    path = f"/oc/{alice.project.pk}/pty/{pty['id']}/connect?cursor=0"
    for who in (charlie.token, None):
        stranger = communicator(path, token=who)
        connected, code = await stranger.connect(timeout=10)
        assert not connected and code in (4404, 4401)
    ticket = (await sync_to_async(oc(alice).post)(f"{url}/connect-token")).json()["ticket"]
    comm = communicator(f"{path}&ticket={ticket}")
    connected, _ = await comm.connect(timeout=60)
    assert connected
    await comm.send_to(text_data="echo pty-$((6*7)); stty size\n")
    seen = ""
    while "pty-42" not in seen or "33 99" not in seen:
        seen += await comm.receive_from(timeout=30)
    await sync_to_async(oc(alice).delete)(url)  # deleting the Pty closes its socket
    closed = await comm.receive_output(timeout=10)
    while closed.get("type") != "websocket.close":
        closed = await comm.receive_output(timeout=10)
    assert await AuditEvent.objects.filter(action="session.terminal.open", target_id=session.pk).aexists()
