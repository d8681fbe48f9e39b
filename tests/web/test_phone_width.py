"""Every screen of the web app and of the admin console at phone width (390 px): nothing scrolls sideways,
neither the page nor its main pane. Wide tables may scroll inside their own box (`.tablewrap`, a focusable
region); the page may not. Each screen is also shot at both widths (var/screenshots/width-*)."""

import pytest
from django.db import transaction

from hangar.accounts.invitation_services import invitation_create
from hangar.accounts.models import Role
from hangar.accounts.org_policy_services import org_mcp_policy_set, org_permission_policy_set
from hangar.integrations.webhooks.services import delivery_create, endpoint_create
from hangar.projects.services import project_update
from hangar.usage.services import budget_set
from tests.web.conftest import DESKTOP, PHONE, SHOTS

pytestmark = pytest.mark.django_db(transaction=True)

# How far the page, and the app's main pane, reach past the viewport's width (0 when nothing overflows),
# with the widest elements that stick out, to say what to fix.
OVERFLOW = """() => {
  const main = document.querySelector('main.content');
  const out = [...document.querySelectorAll('body *')]
    .map(el => [el, el.getBoundingClientRect()])
    .filter(([el, r]) => r.right > innerWidth + 1 && !el.closest('.tablewrap'))
    .sort((a, b) => b[1].right - a[1].right).slice(0, 4)
    .map(([el, r]) => `${el.tagName.toLowerCase()}.${el.className} → ${Math.round(r.right)}`);
  return {
    page: document.documentElement.scrollWidth - innerWidth,
    main: main ? main.scrollWidth - main.clientWidth : 0,
    out,
  };
}"""


def seed(alice, bob, settings) -> str:
    """Something on each screen: an org rule, a budget, a pending invitation (its secret is returned), a
    webhook endpoint and one of its deliveries, an MCP allow-list and a project's MCP server with a long URL
    and a header."""
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = True  # the endpoint is never called here
    with transaction.atomic():
        org_permission_policy_set(
            actor=alice.actor,
            org=alice.org,
            rules=[{"permission": "bash", "pattern": "rm *", "action": "deny"}],
        )
        budget_set(
            actor=alice.actor,
            org=alice.org,
            scope="project",
            period="month",
            hard_limit=50,
            project_id=alice.project.pk,
        )
        _row, secret = invitation_create(
            actor=alice.actor, org=alice.org, email="a.rather.long.address@acme.test", role=Role.MEMBER
        )
        endpoint, _ = endpoint_create(
            actor=alice.actor,
            org=alice.org,
            url="http://127.0.0.1:9/a/rather/long/path/for/the/endpoint/of/this/hook",
            event_types=["session.idle", "session.error"],
        )
        delivery_create(
            endpoint=endpoint, event_type="session.idle", session_id="ses_x", source_event_id=1, body="{}"
        )
        org_mcp_policy_set(
            actor=alice.actor,
            org=alice.org,
            policy={"remote": ["https://mcp.a-rather-long-host-name.example.com/*"], "local": ["npx -y *"]},
        )
        url = "https://mcp.a-rather-long-host-name.example.com/a/rather/long/path/for/the/mcp/endpoint"
        headers = {"Authorization": "Bearer {env:A_RATHER_LONG_SECRET_NAME_FOR_THE_TOKEN}"}
        project_update(
            actor=alice.actor,
            project=alice.project,
            mcp={"github-enterprise": {"type": "remote", "url": url, "headers": headers}},
        )
    return secret


def look(page, name: str, overflowing: dict) -> None:
    """Measure the screen on show at phone width, then shoot it at both widths."""
    page.wait_for_load_state("networkidle")
    seen = page.evaluate(OVERFLOW)
    if seen["page"] > 0 or seen["main"] > 0:
        overflowing[name] = seen
    shot = name.replace(" ", "-")
    page.screenshot(path=str(SHOTS / f"width-{shot}-phone.png"))
    page.set_viewport_size(DESKTOP)
    page.screenshot(path=str(SHOTS / f"width-{shot}-desktop.png"))
    page.set_viewport_size(PHONE)


def test_no_screen_scrolls_sideways_at_phone_width(alice, bob, open_app, settings):
    secret = seed(alice, bob, settings)
    overflowing: dict = {}
    visitor = open_app().page
    visitor.set_viewport_size(PHONE)
    visitor.goto("/login")
    visitor.get_by_role("button", name="Sign in").wait_for()
    look(visitor, "login", overflowing)
    visitor.goto(f"/invite/{secret}")
    visitor.get_by_role("button", name="Create account and join").wait_for()
    look(visitor, "invite", overflowing)

    page = open_app(alice).page
    page.set_viewport_size(PHONE)
    project = alice.project.pk
    screens = {
        "org home": ("/o/acme", "heading", "Projects"),
        "settings": ("/o/acme/settings", "heading", "Organisation settings"),
        "project": (f"/o/acme/p/{project}", "button", "New session"),
        "project settings": (f"/o/acme/p/{project}/settings", "heading", "Project settings"),
    }
    for section, heading in (
        ("members", "Members"),
        ("policies", "Organisation permission policy"),
        ("repositories", "Repository"),
        ("agents", "Project agents"),
        ("mcp", "MCP allow-list"),
        ("usage", "Usage"),
        ("budgets", "Budgets"),
        ("audit", "Audit log"),
        ("sso", "Single sign-on (OpenID Connect)"),
        ("webhooks", "Outgoing endpoints"),
    ):
        screens[f"console {section}"] = (f"/o/acme/console/{section}", "heading", heading)
    for name, (path, role, label) in screens.items():
        page.goto(path)
        page.get_by_role(role, name=label).first.wait_for()
        look(page, name, overflowing)
    page.goto(f"/o/acme/p/{project}")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url("**/s/ses_*")
    page.get_by_role("textbox").first.wait_for()
    look(page, "session", overflowing)
    assert overflowing == {}, overflowing
