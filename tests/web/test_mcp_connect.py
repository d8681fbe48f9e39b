"""Connecting an MCP server from the web app, in a real browser (issue 27): an admin adds the server with
OAuth declared; a member opens the project's settings and the OAuth-protected SDK server
(tests/engine/oauth_mcp_server.py: its own authorization server, approving at once) shows "needs
authorization" with a Connect button; Connect sends the browser to the authorization server, which sends it
to Hangar's callback, which brings it back to the settings page with "Connected to tools" and the server
connected, for that member only; Disconnect forgets the grant. Hangar's public URL is the live server's own
here, so the callback comes back to it. Screenshots at desktop and phone width
(var/screenshots/mcp-connect*)."""

import pytest
from django.conf import settings
from playwright.sync_api import expect
from rest_framework.test import APIClient

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.projects.models import McpOAuthGrant, Project
from tests.opencode.live import Daphne
from tests.opencode.test_mcp_oauth import OAuthMcpServer
from tests.web.conftest import DESKTOP, PHONE, SHOTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker):
    server = Daphne(settings.DATABASES["default"]["NAME"], public=True)
    yield server
    server.stop()


@pytest.fixture
def oauth_server():
    server = OAuthMcpServer()
    yield server
    server.stop()


def status_of(persona) -> dict:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {persona.token}")
    return client.get(f"/api/orgs/acme/projects/{persona.project.pk}/mcp/").json()


def test_a_member_connects_a_server_through_its_authorization_server_and_disconnects_it(
    alice, bob, open_app, oauth_server
):
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"remote": ["http://127.0.0.1:*"]})
    settings_path = f"/o/acme/p/{alice.project.pk}/settings"
    admin = open_app(alice).page
    admin.goto(settings_path)
    admin.get_by_role("button", name="Add MCP server").click()
    form = admin.get_by_role("form", name="Add an MCP server")
    form.get_by_label("Name", exact=True).fill("tools")
    form.get_by_label("URL", exact=True).fill(oauth_server.url)
    form.get_by_label("OAuth").select_option("member")
    form.get_by_role("button", name="Save server").click()
    admin.get_by_role("table", name="MCP servers").get_by_role("row").filter(has_text="tools").wait_for()
    assert Project.objects.get(pk=alice.project.pk).mcp["tools"]["oauth"] == {}

    app = open_app(bob)
    page = app.page
    page.goto(settings_path)
    row = page.get_by_role("table", name="MCP servers").get_by_role("row").filter(has_text="tools")
    expect(row.locator("td[data-status]")).to_have_attribute("data-status", "needs_auth")
    expect(row).to_contain_text("needs authorization")
    row.scroll_into_view_if_needed()
    app.shot("mcp-connect-needed")

    with page.expect_request(lambda r: r.url.startswith(f"{oauth_server.base}/authorize")):
        row.get_by_role("button", name="Connect tools").click()
    page.wait_for_url(f"**{settings_path}*")
    notice = page.get_by_role("region", name="MCP servers").get_by_role("status")
    expect(notice).to_have_text("Connected to tools")
    expect(row.locator("td[data-status]")).to_have_attribute("data-status", "connected")
    assert "mcp=" not in page.url  # taken off, so a reload does not announce it again
    assert McpOAuthGrant.objects.filter(project=alice.project, user=bob.user).count() == 1
    assert status_of(bob) == {"tools": {"status": "connected"}}
    assert status_of(alice) == {"tools": {"status": "needs_auth"}}  # each member authorizes for themselves
    app.shot("mcp-connected")
    page.set_viewport_size(PHONE)  # the row itself at phone width (the shots above keep the desktop scroll)
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "mcp-connected-row-phone.png"))
    page.set_viewport_size(DESKTOP)

    row.get_by_role("button", name="Disconnect tools").click()
    expect(row.locator("td[data-status]")).to_have_attribute("data-status", "needs_auth")
    expect(row.get_by_role("button", name="Connect tools")).to_be_visible()
    assert not McpOAuthGrant.objects.filter(project=alice.project, user=bob.user).exists()
    page.reload()
    expect(page.get_by_text("Connected to tools")).to_have_count(0)
