"""A run calls an OAuth-protected MCP server with the tokens of the member it acts for, through the real
worker, the real Docker sandbox and the scripted model, against our own OAuth server written with the SDK
(tests/engine/oauth_mcp_server.py). Alice authorized the server, so her run is offered its tool and the
call reaches it as her client; bob did not, so his run gets none of its tools and his status is
needs_auth while the run goes on. Her tokens appear nowhere but in the requests to the server: not in an
event, a part, the audit log, the worker's log or the sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest
from docker import from_env

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Event, Part
from hangar.engine.services import session_prompt
from hangar.projects.mcp_oauth_services import mcp_grant_get
from sandbox import containers
from tests.engine.conftest import assistant_messages, text_prompt, tool_parts, wait_idle
from tests.engine.test_mcp_tools import call, offered
from tests.opencode.test_mcp_oauth import OAuthMcpServer, authorize, configure, project_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def oauth_server():
    server = OAuthMcpServer()
    yield server
    server.stop()


def test_a_run_uses_its_members_tokens_and_another_members_run_goes_without(
    api, alice, bob, script, make_session, worker, oauth_server
):
    configure(alice, oauth_server)
    assert authorize(api, alice).status_code == 302
    grant = mcp_grant_get(
        project_id=alice.project.pk, user_id=alice.user.pk, server="tools", url=oauth_server.url
    )
    assert grant is not None
    client_id = grant["client"]["client_id"]

    script_id = script.load([[call("c1", "tools_whoami")], [{"text": "done"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("who calls?"))
    session = wait_idle(session)
    assert "tools_whoami" in offered(script, script_id)
    (whoami,) = tool_parts(session)
    assert whoami["state"]["status"] == "completed", whoami
    assert whoami["state"]["output"] == f"called by {client_id}"
    assert f"call whoami {client_id}" in oauth_server.log()

    bobs_script = script.load([[{"text": "nothing to call"}]])
    bobs = make_session(bob, bobs_script)
    session_prompt(actor=bob.actor, session=bobs, parts=text_prompt("who calls?"))
    bobs = wait_idle(bobs)
    tools = offered(script, bobs_script)
    assert "bash" in tools and not any(name.startswith("tools_") for name in tools)
    assert assistant_messages(bobs)[-1]["finish"] == "stop"  # the run went on without the server
    assert api(bob).get(project_url(bob)).json() == {"tools": {"status": "needs_auth"}}
    assert api(alice).get(project_url(alice)).json() == {"tools": {"status": "connected"}}

    # Alice's tokens went to the server only.
    # By its name: a listing inspects every container, and one another test removes meanwhile is a 404.
    container = from_env().containers.get(containers.session_container_name(session.pk))
    worker_log = Path(worker.log.name).read_text()
    for secret in (grant["access_token"], grant["refresh_token"]):
        for sid in (session.pk, bobs.pk):
            assert not Event.objects.filter(session_id=sid, payload__icontains=secret).exists()
            assert not Part.objects.filter(session_id=sid, data__icontains=secret).exists()
        assert not AuditEvent.objects.filter(data__icontains=secret).exists()
        assert secret not in worker_log
        assert not any(secret in value for value in container.attrs["Config"]["Env"])
        found = container.exec_run(
            ["sh", "-c", f"grep -rlF -- {secret} /workspace /tmp /home /root /etc 2>/dev/null"]
        )
        assert found.output.strip() == b"", found.output
