"""The console's MCP section in a real browser (issue 27): the org's allow-list, which an admin edits and
a bad pattern answers with the server's message beside its row, and which a viewer, a member or an auditor
never sees. Screenshots at desktop and phone width (var/screenshots/mcp-console-*)."""

import pytest
from playwright.sync_api import expect

from hangar.accounts.models import Org, Role
from hangar.accounts.org_policy_services import org_mcp_policy_set
from tests.conftest import make_persona

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def test_an_admin_edits_the_mcp_allow_list_and_a_bad_pattern_is_named_beside_its_row(alice, open_app):
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"remote": ["https://mcp.acme.test/*"]})
    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console")
    page.get_by_role("navigation", name="Console sections").get_by_role("link", name="MCP").click()
    page.wait_for_url("**/console/mcp")
    form = page.get_by_role("form", name="MCP allow-list")
    expect(form.get_by_label("Remote URL 1", exact=True)).to_have_value("https://mcp.acme.test/*")
    expect(form.get_by_role("group", name="Local commands")).to_contain_text("None allowed.")

    form.get_by_role("button", name="Add local command").click()
    form.get_by_label("Local command 1", exact=True).fill("npx -y @modelcontextprotocol/server-*")
    form.get_by_role("button", name="Add remote URL").click()
    long_pattern = "https://mcp.example.com/" + "x" * 2100
    form.get_by_label("Remote URL 2", exact=True).fill(long_pattern)
    form.get_by_role("button", name="Save MCP allow-list").click()
    # The server names `policy.remote[1]`: its message shows in that row, and what was typed stays.
    row = form.get_by_role("listitem").filter(has=page.get_by_label("Remote URL 2", exact=True))
    expect(row.get_by_role("alert")).to_contain_text("at most 2048 characters")
    expect(form.get_by_label("Remote URL 2", exact=True)).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Remote URL 2", exact=True)).to_have_value(long_pattern)
    assert (
        form.get_by_role("listitem")
        .filter(has=page.get_by_label("Remote URL 1", exact=True))
        .get_by_role("alert")
        .count()
        == 0
    )
    assert Org.objects.get(pk=alice.org.pk).mcp_policy == {"remote": ["https://mcp.acme.test/*"], "local": []}
    app.shot("mcp-console-error")

    form.get_by_label("Remote URL 2", exact=True).fill("https://*.example.com/mcp")
    form.get_by_role("button", name="Save MCP allow-list").click()
    expect(form.get_by_role("status")).to_have_text("Allow-list saved.")
    expect(form.get_by_role("alert")).to_have_count(0)
    assert Org.objects.get(pk=alice.org.pk).mcp_policy == {
        "local": ["npx -y @modelcontextprotocol/server-*"],
        "remote": ["https://mcp.acme.test/*", "https://*.example.com/mcp"],
    }
    page.reload()
    expect(page.get_by_label("Remote URL 2", exact=True)).to_have_value("https://*.example.com/mcp")
    app.shot("mcp-console")


@pytest.mark.parametrize("role", [Role.VIEWER, Role.AUDITOR, Role.MEMBER])
def test_who_is_not_an_admin_never_sees_the_mcp_section(alice, role, open_app):
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"remote": ["https://mcp.acme.test/*"]})
    other = make_persona(f"{role}@acme.test", alice.org, role, "rocket")
    page = open_app(other).page
    page.goto("/o/acme/console/mcp")
    if role == Role.AUDITOR:  # the console, without the admin sections
        nav = page.get_by_role("navigation", name="Console sections")
        expect(nav.get_by_role("link", name="Usage")).to_be_visible()
        expect(nav.get_by_role("link", name="MCP")).to_have_count(0)
    else:
        expect(page.get_by_text("The console is for admins and auditors.")).to_be_visible()
    expect(page.get_by_role("heading", name="MCP allow-list")).to_have_count(0)
    assert "mcp.acme.test" not in page.content()
