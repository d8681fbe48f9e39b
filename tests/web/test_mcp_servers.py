"""A project's MCP servers in its settings page, in a real browser (issue 27): an admin adds a remote
server (a URL the org does not allow is refused beside the URL field), sees its status, disables and
removes it, with a header's `{env:NAME}` shown as written and the secret's value nowhere on the page; a
member reads them and changes nothing; a local server is added and edited. Screenshots at desktop and
phone width (var/screenshots/mcp-server*)."""

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from hangar.accounts.org_policy_services import org_mcp_policy_set
from hangar.projects.env_var_services import env_var_set
from hangar.projects.models import Project
from tests.web.conftest import DESKTOP, PHONE, SHOTS

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]

SECRET = "ghp_mcpWebSecret7Qx2Lm9Vr4"


def status_of(persona) -> dict:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {persona.token}")
    return client.get(f"/api/orgs/acme/projects/{persona.project.pk}/mcp/").json()


def servers_table(page):
    return page.get_by_role("table", name="MCP servers")


def test_an_admin_adds_a_projects_mcp_server_sees_its_status_and_removes_it(alice, bob, open_app):
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"remote": ["https://mcp.acme.test/*"]})
    env_var_set(
        actor=alice.actor,
        project=alice.project,
        name="GITHUB_TOKEN",
        value=SECRET,
        secret=True,
        scope={"mcp": ["github"]},
    )
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    section = page.get_by_role("region", name="MCP servers")
    expect(section).to_contain_text("No MCP servers.")
    section.get_by_role("button", name="Add MCP server").click()
    form = section.get_by_role("form", name="Add an MCP server")
    form.get_by_label("Name", exact=True).fill("github")
    form.get_by_label("URL", exact=True).fill("https://evil.example.net/mcp")
    form.get_by_label("Headers").fill("Authorization: Bearer {env:GITHUB_TOKEN}\nX-Team: platform")
    form.get_by_role("button", name="Save server").click()
    # Not in the org's allow-list: the 400 names mcp.github.url, shown under the URL field.
    expect(form.get_by_label("URL", exact=True)).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_role("alert")).to_have_text("This URL is not in the org's MCP allow-list.")
    expect(form.get_by_label("URL", exact=True)).to_have_value("https://evil.example.net/mcp")
    assert Project.objects.get(pk=alice.project.pk).mcp == {}
    form.scroll_into_view_if_needed()
    app.shot("mcp-server-form")

    form.get_by_label("URL", exact=True).fill("https://mcp.acme.test/github")
    form.get_by_role("button", name="Save server").click()
    row = servers_table(page).get_by_role("row").filter(has_text="github")
    expect(row).to_contain_text("https://mcp.acme.test/github")
    # The header names the secret; its value is never on the page.
    expect(row.locator(".secretref")).to_have_text("{env:GITHUB_TOKEN}")
    expect(row).to_contain_text("X-Team: platform")
    assert Project.objects.get(pk=alice.project.pk).mcp == {
        "github": {
            "type": "remote",
            "url": "https://mcp.acme.test/github",
            "enabled": True,
            "headers": {"Authorization": "Bearer {env:GITHUB_TOKEN}", "X-Team": "platform"},
        }
    }
    # Its status, as the project's MCP endpoint answers it for this member (never tried yet: failed, saying so).
    answer = status_of(alice)["github"]
    assert answer["status"] == "failed" and "Not connected yet" in answer["error"], answer
    expect(row.locator("td[data-status]")).to_have_attribute("data-status", "failed")
    expect(row.locator("td[data-status]")).to_contain_text(answer["error"])
    section.scroll_into_view_if_needed()
    app.shot("mcp-servers")
    page.set_viewport_size(PHONE)  # the row itself at phone width (the shots above keep the desktop scroll)
    row.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "mcp-servers-row-phone.png"))
    page.set_viewport_size(DESKTOP)

    row.get_by_role("button", name="Disable github").click()
    expect(row.locator("td[data-status]")).to_have_attribute("data-status", "disabled")
    expect(row.get_by_role("button", name="Enable github")).to_be_visible()
    assert Project.objects.get(pk=alice.project.pk).mcp["github"]["enabled"] is False

    # A member reads the servers and their status, and changes nothing.
    member = open_app(bob).page
    member.goto(f"/o/acme/p/{alice.project.pk}/settings")
    member_row = servers_table(member).get_by_role("row").filter(has_text="github")
    expect(member_row.locator("td[data-status]")).to_have_attribute("data-status", "disabled")
    assert member_row.get_by_role("button", name="Remove github").count() == 0
    assert member.get_by_role("button", name="Add MCP server").count() == 0
    assert SECRET not in member.content()

    row.get_by_role("button", name="Remove github").click()
    expect(section).to_contain_text("No MCP servers.")
    assert Project.objects.get(pk=alice.project.pk).mcp == {}
    assert SECRET not in page.content()


def test_an_admin_adds_a_local_server_and_edits_it(alice, open_app):
    org_mcp_policy_set(actor=alice.actor, org=alice.org, policy={"local": ["npx -y @modelcontextprotocol/*"]})
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    section = page.get_by_role("region", name="MCP servers")
    section.get_by_role("button", name="Add MCP server").click()
    form = section.get_by_role("form", name="Add an MCP server")
    form.get_by_label("Name", exact=True).fill("time")
    form.get_by_label("Type").select_option("local")
    form.get_by_label("Command").fill("npx\n-y\n@modelcontextprotocol/server-time")
    form.get_by_label("Environment").fill("TZ=UTC")
    form.get_by_role("button", name="Save server").click()
    row = servers_table(page).get_by_role("row").filter(has_text="time")
    expect(row).to_contain_text("npx -y @modelcontextprotocol/server-time")
    assert Project.objects.get(pk=alice.project.pk).mcp["time"] == {
        "type": "local",
        "command": ["npx", "-y", "@modelcontextprotocol/server-time"],
        "environment": {"TZ": "UTC"},
        "enabled": True,
    }
    row.get_by_role("button", name="Edit time").click()
    form = section.get_by_role("form", name="Edit MCP server time")
    expect(form.get_by_label("Command")).to_have_value("npx\n-y\n@modelcontextprotocol/server-time")
    form.get_by_label("Command").fill("uvx\nmcp-server-time")  # not in the allow-list
    form.get_by_role("button", name="Save server").click()
    expect(form.get_by_label("Command")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_role("alert")).to_contain_text("not in the org's MCP allow-list")
    form.get_by_label("Timeout (ms)").fill("5000")
    form.get_by_label("Command").fill("npx\n-y\n@modelcontextprotocol/server-time\n--local-timezone=UTC")
    form.get_by_role("button", name="Save server").click()
    expect(row).to_contain_text("--local-timezone=UTC")
    assert Project.objects.get(pk=alice.project.pk).mcp["time"]["timeout"] == 5000
