"""OpenCode's /mcp routes over a project's MCP servers, in the 1.18.33 shapes: the status map (connected,
disabled, refused by the org), adding a server (admins; a 400 naming the field), connecting to a real server of
our own (tests/engine/mcp_server.py) and disconnecting, the OAuth routes saying plainly why a server without
OAuth metadata cannot be authorized (tests/opencode/test_mcp_oauth.py has the flow itself), 404s for an unknown
server and for another org."""

import pytest

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.projects.env_var_services import env_var_set
from tests.engine.test_mcp_tools import TOKEN, McpServer
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def mcp_server():
    server = McpServer()
    yield server
    server.stop()


def allow_loopback(persona):
    org_mcp_policy_set(actor=persona.actor, org=persona.org, policy={"remote": ["http://127.0.0.1:*"]})


def remote(server: McpServer) -> dict:
    return {"type": "remote", "url": server.url, "headers": {"Authorization": "Bearer {env:TOOLS_TOKEN}"}}


def test_alice_adds_connects_and_disconnects_a_server(oc, alice, mcp_server):
    allow_loopback(alice)
    env_var_set(
        actor=alice.actor, project=alice.project, name="TOOLS_TOKEN", value=TOKEN, scope={"mcp": ["tools"]}
    )
    url = base_url(alice)
    added = oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    assert_response(added, "/mcp", "post")
    assert added.json() == {"tools": {"status": "failed", "error": added.json()["tools"]["error"]}}

    connected = oc(alice).post(f"{url}/mcp/tools/connect")
    assert_response(connected, "/mcp/{name}/connect", "post")
    assert connected.json() is True
    listed = oc(alice).get(f"{url}/mcp")
    assert_response(listed, "/mcp")
    assert listed.json() == {"tools": {"status": "connected"}}

    assert oc(alice).post(f"{url}/mcp/tools/disconnect").json() is True
    assert oc(alice).get(f"{url}/mcp").json() == {"tools": {"status": "disabled"}}
    alice.project.refresh_from_db()
    assert alice.project.mcp["tools"]["enabled"] is False
    assert oc(alice).post(f"{url}/mcp/tools/connect").json() is True  # enables it again
    alice.project.refresh_from_db()
    assert alice.project.mcp["tools"]["enabled"] is True


def test_a_wrong_secret_connects_to_nothing_and_says_why(oc, alice, mcp_server):
    allow_loopback(alice)
    url = base_url(alice)
    oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    assert oc(alice).post(f"{url}/mcp/tools/connect").json() is False
    status = oc(alice).get(f"{url}/mcp").json()["tools"]
    assert status["status"] == "failed" and status["error"]


def test_a_server_the_org_no_longer_allows_shows_as_failed(oc, alice, mcp_server):
    allow_loopback(alice)
    url = base_url(alice)
    oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={})
    response = oc(alice).get(f"{url}/mcp")
    assert_response(response, "/mcp")
    assert response.json()["tools"] == {
        "status": "failed",
        "error": "This URL is not in the org's MCP allow-list.",
    }
    assert oc(alice).post(f"{url}/mcp/tools/connect").json() is False


def test_bad_config_is_a_400_naming_the_field(oc, alice):
    allow_loopback(alice)
    bad = {"type": "remote", "url": "http://127.0.0.1:1/mcp", "timeout": -5}
    response = oc(alice).post(f"{base_url(alice)}/mcp", {"name": "tools", "config": bad}, format="json")
    assert response.status_code == 400
    assert "mcp.tools.timeout" in response.json()["data"]["errors"]
    elsewhere = {"type": "remote", "url": "https://evil.example.net/mcp"}
    response = oc(alice).post(f"{base_url(alice)}/mcp", {"name": "x", "config": elsewhere}, format="json")
    assert "mcp.x.url" in response.json()["data"]["errors"]


def test_bob_may_read_and_connect_but_not_change_the_config(oc, alice, bob, mcp_server):
    allow_loopback(alice)
    url = base_url(alice)
    oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    assert oc(bob).get(f"{url}/mcp").status_code == 200
    assert (
        oc(bob).post(f"{url}/mcp", {"name": "t2", "config": remote(mcp_server)}, format="json").status_code
        == 403
    )
    assert oc(bob).post(f"{url}/mcp/tools/disconnect").status_code == 403
    assert oc(bob).post(f"{url}/mcp/tools/connect").status_code == 200


def test_a_server_publishing_no_oauth_metadata_is_a_400_and_unknown_servers_are_404(oc, alice, mcp_server):
    allow_loopback(alice)
    url = base_url(alice)
    oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    response = oc(alice).post(f"{url}/mcp/tools/auth")
    assert_response(response, "/mcp/{name}/auth", "post", 400)
    assert response.json()["error"] == "the server publishes no OAuth authorization server metadata"
    missing = oc(alice).post(f"{url}/mcp/nope/connect")
    assert_response(missing, "/mcp/{name}/connect", "post", 404)
    assert missing.json()["_tag"] == "McpServerNotFoundError"
    assert oc(alice).post(f"{url}/mcp/nope/auth").status_code == 404


def test_it_rejects_other_org(oc, alice, charlie, mcp_server):
    allow_loopback(alice)
    url = base_url(alice)
    oc(alice).post(f"{url}/mcp", {"name": "tools", "config": remote(mcp_server)}, format="json")
    assert oc(charlie).get(f"{url}/mcp").status_code == 404
    assert oc(charlie).post(f"{url}/mcp/tools/connect").status_code == 404
    assert oc(charlie).post(f"{url}/mcp/tools/disconnect").status_code == 404
    assert (
        oc(charlie).post(f"{url}/mcp", {"name": "x", "config": remote(mcp_server)}, format="json").status_code
        == 404
    )
