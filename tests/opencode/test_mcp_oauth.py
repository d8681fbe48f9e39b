"""OAuth 2.1 for remote MCP servers, per member, against a real OAuth-protected server of our own written
with the official SDK (tests/engine/oauth_mcp_server.py: its own authorization server, approving at once):
discovery, dynamic registration, the authorization URL followed by an HTTP client as a browser would, the
callback, the member's status; OpenCode's /mcp/{name}/auth* routes in their 1.18.33 shapes; refresh before
a call and on a 401, each token and each member holding a session of its own; a member who leaves taking their
grant along; revocation; a bad, replayed or someone else's state; metadata pointing at the cloud
metadata address; another org's member."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.conf import settings
from rest_framework.test import APIClient

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.accounts.services import member_remove
from hangar.engine.mcp import oauth, oauth_client
from hangar.engine.mcp.tools import remote_client
from hangar.projects.env_var_services import env_var_set
from hangar.projects.mcp_oauth_services import mcp_grant_get, mcp_grant_refresh
from hangar.projects.models import McpOAuthGrant
from hangar.projects.services import project_update
from tests.engine.conftest import wait_for
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db

SERVER = Path(__file__).parent.parent / "engine" / "oauth_mcp_server.py"  # shared with the run tests


class OAuthMcpServer:
    def __init__(self, *mode: str):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(self.port), *mode],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(self._up, timeout=30, what="the OAuth MCP server to listen")

    def _up(self) -> bool:
        try:
            return httpx.post(self.url, timeout=1).status_code == 401
        except httpx.HTTPError:
            return False

    def log(self) -> list[str]:
        return httpx.get(f"{self.base}/debug/log").json()

    def expire_tokens(self) -> None:
        httpx.post(f"{self.base}/debug/expire").raise_for_status()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def oauth_server():
    server = OAuthMcpServer()
    yield server
    server.stop()


def configure(persona, server: OAuthMcpServer, **oauth_config) -> None:
    org_mcp_policy_set(actor=persona.actor, org=persona.org, policy={"remote": ["http://127.0.0.1:*"]})
    config = {"type": "remote", "url": server.url, "oauth": oauth_config}
    project_update(actor=persona.actor, project=persona.project, mcp={"tools": config})
    persona.project.refresh_from_db()


def project_url(persona, rest: str = "") -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/mcp/{rest}"


def approve(authorization_url: str) -> str:
    """What the person's browser does: open the URL; the server approves at once and redirects back.
    Returns the redirect's URL (Hangar's callback with code and state)."""
    answer = httpx.get(authorization_url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]


def authorize(api, persona) -> httpx.Response:
    started = api(persona).post(project_url(persona, "tools/auth"))
    assert started.status_code == 200, started.content
    back = approve(started.json()["authorizationUrl"])
    assert back.startswith(f"{settings.PUBLIC_URL}/api/mcp/oauth/callback?")
    return APIClient().get(f"/api/mcp/oauth/callback?{urlsplit(back).query}")  # no cookie: the state finds it


def test_a_member_authorizes_a_server_for_themselves_only(api, alice, bob, oauth_server):
    configure(alice, oauth_server)
    assert api(alice).get(project_url(alice)).json() == {"tools": {"status": "needs_auth"}}

    started = api(alice).post(project_url(alice, "tools/auth")).json()
    assert started.keys() == {"authorizationUrl", "oauthState"}
    query = parse_qs(urlsplit(started["authorizationUrl"]).query)
    assert query["code_challenge_method"] == ["S256"] and query["state"] == [started["oauthState"]]
    assert query["resource"] == [oauth_server.url] and query["scope"] == ["tools"]
    assert "code_verifier" not in started["authorizationUrl"]

    callback = APIClient().get(
        f"/api/mcp/oauth/callback?{urlsplit(approve(started['authorizationUrl'])).query}"
    )
    assert callback.status_code == 302
    assert callback["Location"] == f"/o/acme/p/{alice.project.pk}/settings?mcp=tools"
    assert api(alice).get(project_url(alice)).json() == {"tools": {"status": "connected"}}
    # Bob is another member: his status is his own, and alice's grant is not his.
    assert api(bob).get(project_url(bob)).json() == {"tools": {"status": "needs_auth"}}
    registered, authorized, exchanged = oauth_server.log()[:3]  # then the status check's tool listing
    client_id = registered.split()[1]
    assert authorized == f"authorize {client_id} resource={oauth_server.url}"
    assert exchanged == f"code {client_id}"

    row = McpOAuthGrant.objects.get(project=alice.project, user=alice.user, server="tools")
    grant = mcp_grant_get(
        project_id=alice.project.pk, user_id=alice.user.pk, server="tools", url=oauth_server.url
    )
    assert grant is not None and grant["access_token"] not in row.grant_encrypted  # encrypted at rest
    assert grant["refresh_token"] not in row.grant_encrypted


def test_opencode_auth_routes_start_finish_with_a_code_and_remove(oc, alice, oauth_server):
    configure(alice, oauth_server)
    url = base_url(alice)
    assert oc(alice).get(f"{url}/mcp").json() == {"tools": {"status": "needs_auth"}}
    started = oc(alice).post(f"{url}/mcp/tools/auth")
    assert_response(started, "/mcp/{name}/auth", "post")
    code = parse_qs(urlsplit(approve(started.json()["authorizationUrl"])).query)["code"][0]

    finished = oc(alice).post(f"{url}/mcp/tools/auth/callback", {"code": code}, format="json")
    assert_response(finished, "/mcp/{name}/auth/callback", "post")
    assert finished.json() == {"status": "connected"}
    authenticated = oc(alice).post(f"{url}/mcp/tools/auth/authenticate")
    assert_response(authenticated, "/mcp/{name}/auth/authenticate", "post")
    assert authenticated.json() == {"status": "connected"}
    assert oc(alice).get(f"{url}/mcp").json() == {"tools": {"status": "connected"}}
    assert oc(alice).post(f"{url}/mcp/tools/connect").json() is True  # with her tokens

    removed = oc(alice).delete(f"{url}/mcp/tools/auth")
    assert_response(removed, "/mcp/{name}/auth", "delete")
    assert removed.json() == {"success": True}
    assert any(line.startswith("revoke refresh") for line in oauth_server.log())
    assert oc(alice).get(f"{url}/mcp").json() == {"tools": {"status": "needs_auth"}}
    assert not McpOAuthGrant.objects.filter(user=alice.user).exists()
    assert oc(alice).post(f"{url}/mcp/tools/connect").json() is False
    assert oc(alice).get(f"{url}/mcp").json() == {"tools": {"status": "needs_auth"}}
    # A second code for the same flow finds nothing pending.
    again = oc(alice).post(f"{url}/mcp/tools/auth/callback", {"code": code}, format="json")
    assert again.status_code == 400 and again.json()["error"]


def test_servers_that_take_no_oauth_and_unknown_names(oc, alice, oauth_server):
    org_mcp_policy_set(
        actor=alice.actor, org=alice.org, policy={"remote": ["http://127.0.0.1:*"], "local": ["*"]}
    )
    project_update(
        actor=alice.actor,
        project=alice.project,
        mcp={
            "plain": {"type": "remote", "url": oauth_server.url, "oauth": False},
            "here": {"type": "local", "command": ["true"]},
        },
    )
    url = base_url(alice)
    for name in ("plain", "here"):
        response = oc(alice).post(f"{url}/mcp/{name}/auth")
        assert_response(response, "/mcp/{name}/auth", "post", 400)
        assert "does not support OAuth" in response.json()["error"]
    missing = oc(alice).post(f"{url}/mcp/nope/auth")
    assert_response(missing, "/mcp/{name}/auth", "post", 404)
    assert missing.json()["_tag"] == "McpServerNotFoundError"


def test_an_expired_token_is_refreshed_before_the_call_and_a_refused_one_on_the_401(
    api, alice, bob, oauth_server
):
    configure(alice, oauth_server)
    assert authorize(api, alice).status_code == 302
    key = {
        "project_id": alice.project.pk,
        "user_id": alice.user.pk,
        "server": "tools",
        "url": oauth_server.url,
    }
    first = mcp_grant_get(**key)
    assert first is not None
    client = remote_client(alice.project, "tools", alice.project.mcp["tools"], member=alice.user.pk)
    assert [tool["name"] for tool in client.list_tools()] == ["whoami"]
    opens = oauth_server.log().count("open")
    assert client.list_tools() and oauth_server.log().count("open") == opens  # the held session is reused

    mcp_grant_refresh(**key, refresh=lambda grant: {**grant, "expires_at": 0})  # as if an hour went by
    assert [tool["name"] for tool in client.list_tools()] == ["whoami"]
    second = mcp_grant_get(**key)
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]  # the server rotates them
    assert sum(line.startswith("refresh ") for line in oauth_server.log()) == 1
    assert oauth_server.log().count("open") == opens + 1  # a new token: a session of its own

    oauth_server.expire_tokens()  # the server stops taking the token before its stated expiry
    assert [tool["name"] for tool in client.list_tools()] == ["whoami"]
    assert sum(line.startswith("refresh ") for line in oauth_server.log()) == 2
    assert mcp_grant_get(**key)["access_token"] != second["access_token"]
    assert oauth_server.log().count("open") == opens + 2

    # Bob's grant is his: his calls (the check after his callback, then this one) hold a session of their
    # own, never alice's, and reach the server as his client.
    before = oauth_server.log().count("open")
    assert authorize(api, bob).status_code == 302
    bobs = remote_client(bob.project, "tools", alice.project.mcp["tools"], member=bob.user.pk)
    result = bobs.call_tool("whoami", {}, threading.Event())
    bobs_client = mcp_grant_get(**{**key, "user_id": bob.user.pk})["client"]["client_id"]
    assert result["content"][0]["text"] == f"called by {bobs_client}"
    assert oauth_server.log().count("open") == before + 1

    # Bob leaves the org: his grant goes with him, alice's stays.
    member_remove(actor=bob.actor, membership=bob.membership)
    assert not McpOAuthGrant.objects.filter(user=bob.user).exists()
    assert McpOAuthGrant.objects.filter(user=alice.user).exists()


def test_a_revoked_grant_asks_the_member_to_sign_in_again(api, alice, oauth_server):
    configure(alice, oauth_server)
    authorize(api, alice)
    client = remote_client(alice.project, "tools", alice.project.mcp["tools"], member=alice.user.pk)
    assert client.list_tools()
    assert api(alice).delete(project_url(alice, "tools/auth")).json() == {"success": True}
    assert any(line.startswith("revoke refresh") for line in oauth_server.log())
    with pytest.raises(oauth_client.NeedsAuth):
        client.list_tools()
    assert api(alice).get(project_url(alice)).json() == {"tools": {"status": "needs_auth"}}


def test_a_bad_replayed_or_someone_elses_state_is_a_400(api, alice, bob, oauth_server):
    configure(alice, oauth_server)
    browser = APIClient()
    assert browser.get("/api/mcp/oauth/callback?code=x&state=nope").status_code == 400
    json_answer = browser.get("/api/mcp/oauth/callback?code=x&state=nope", HTTP_ACCEPT="application/json")
    assert json_answer.status_code == 400 and json_answer.json()["error"] == "mcp_oauth_state"

    started = api(alice).post(project_url(alice, "tools/auth")).json()
    back = urlsplit(approve(started["authorizationUrl"])).query
    bobs_browser = APIClient()
    bobs_browser.force_login(bob.user)
    refused = bobs_browser.get(f"/api/mcp/oauth/callback?{back}", HTTP_ACCEPT="application/json")
    assert refused.status_code == 400 and "someone else" in refused.json()["detail"]
    assert not McpOAuthGrant.objects.exists()
    # The state was spent by that attempt: it cannot be replayed, even by alice.
    assert APIClient().get(f"/api/mcp/oauth/callback?{back}").status_code == 400

    started = api(alice).post(project_url(alice, "tools/auth")).json()
    back = urlsplit(approve(started["authorizationUrl"])).query
    alices_browser = APIClient()
    alices_browser.force_login(alice.user)
    assert alices_browser.get(f"/api/mcp/oauth/callback?{back}").status_code == 302
    assert alices_browser.get(f"/api/mcp/oauth/callback?{back}").status_code == 400  # replayed


def test_without_dynamic_registration_the_configs_client_id_and_scoped_secret_are_used(api, alice):
    server = OAuthMcpServer("noreg", oauth.callback_url())
    try:
        configure(alice, server)
        refused = api(alice).post(project_url(alice, "tools/auth"))
        assert refused.status_code == 400 and "oauth.clientId" in refused.json()["detail"]
        status = api(alice).get(project_url(alice)).json()["tools"]
        assert status["status"] == "needs_client_registration" and "oauth.clientId" in status["error"]

        # The secret is a project secret scoped to the server, named in the config (which members read).
        env_var_set(
            actor=alice.actor,
            project=alice.project,
            name="TOOLS_OAUTH",
            value="fixed-secret",
            scope={"mcp": ["tools"]},
        )
        configure(alice, server, clientId="hangar-fixed", clientSecret="{env:TOOLS_OAUTH}")
        assert authorize(api, alice).status_code == 302
        assert api(alice).get(project_url(alice)).json() == {"tools": {"status": "connected"}}
        log = server.log()
        assert not any(line.startswith("register") for line in log)
        assert "code hangar-fixed" in log  # the code was exchanged with the configured client's secret
        client = remote_client(alice.project, "tools", alice.project.mcp["tools"], member=alice.user.pk)
        called = client.call_tool("whoami", {}, threading.Event())
        assert called["content"][0]["text"] == "called by hangar-fixed"
    finally:
        server.stop()


def test_metadata_pointing_at_the_metadata_address_is_refused(api, alice):
    evil = OAuthMcpServer("evil")
    try:
        configure(alice, evil)
        response = api(alice).post(project_url(alice, "tools/auth"))
        assert response.status_code == 400
        assert "169.254.169.254" in response.json()["detail"]
    finally:
        evil.stop()


def test_it_rejects_other_org(api, oc, alice, charlie, oauth_server):
    configure(alice, oauth_server)
    assert api(charlie).get(project_url(alice)).status_code == 404
    assert api(charlie).post(project_url(alice, "tools/auth")).status_code == 404
    assert api(charlie).delete(project_url(alice, "tools/auth")).status_code == 404
    url = base_url(alice)
    for path in ("auth", "auth/callback", "auth/authenticate"):
        assert oc(charlie).post(f"{url}/mcp/tools/{path}", {"code": "x"}, format="json").status_code == 404
    assert oc(charlie).delete(f"{url}/mcp/tools/auth").status_code == 404
    # Charlie's own browser with alice's state: not his flow.
    started = api(alice).post(project_url(alice, "tools/auth")).json()
    browser = APIClient()
    browser.force_login(charlie.user)
    back = urlsplit(approve(started["authorizationUrl"])).query
    assert browser.get(f"/api/mcp/oauth/callback?{back}").status_code == 400
    assert oauth.PENDING_TTL_S <= 600
