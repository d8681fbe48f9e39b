"""The admin console in a real browser: members and invitations, accepting an invitation link, policies
with the preview, budgets, usage with its chart, the audit log with filters, SSO; an auditor sees only
what the role may read; the platform operator (a superuser) drains a sandbox host from the Hosts section,
which no one else's console has, and opens a session moved off a lost host to its notice. Screenshots of
each page at desktop and phone width (var/screenshots/console-*)."""

import datetime as dt

import pytest
from django.db import transaction
from django.utils import timezone
from playwright.sync_api import expect

from hangar.accounts.invitation_services import invitation_create
from hangar.accounts.models import Invitation, Membership, Role, User
from hangar.accounts.org_policy_services import org_permission_policy_set
from hangar.usage.models import UsageRollup
from tests.conftest import make_persona
from tests.usage.conftest import record

pytestmark = pytest.mark.django_db(transaction=True)


def spend_history(persona) -> None:
    """Today's calls through the ledger, and three earlier days as the daily rollup holds them."""
    record(persona, cost=0.42, input=1200, output=300)
    record(persona, model="m2", cost=0.08)
    today = timezone.now().astimezone(dt.UTC).date()
    for back, cost in ((1, 0.3), (3, 0.9), (6, 0.15)):
        day = today - dt.timedelta(days=back)
        for dim, key in (("o", ""), ("u", str(persona.user.pk)), ("p", str(persona.project.pk))):
            UsageRollup.objects.create(
                org_id=persona.org.pk,
                day=day,
                dim=dim,
                key=key,
                calls=3,
                input_tokens=900,
                output_tokens=90,
                cost=cost,
            )


def test_an_admin_runs_the_console(alice, bob, open_app):
    org_permission_policy_set(
        actor=alice.actor, org=alice.org, rules=[{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    )
    spend_history(bob)
    app = open_app(alice)
    page = app.page
    page.get_by_role("link", name="Console").click()
    page.get_by_role("heading", name="Members").wait_for()
    page.get_by_role("cell", name="bob@acme.test").wait_for()
    nav = page.get_by_role("navigation", name="Console sections")
    assert "Webhooks" in nav.inner_text() and nav.get_by_role("link", name="Hosts").count() == 0

    invite = page.get_by_role("form", name="Invite a member")
    invite.get_by_label("Email").fill("newbie@acme.test")
    invite.get_by_label("Role").select_option("viewer")
    invite.get_by_role("button", name="Send invitation").click()
    page.get_by_text("Invitation sent to newbie@acme.test.").wait_for()
    page.get_by_role("cell", name="newbie@acme.test").wait_for()
    assert Invitation.objects.get(email="newbie@acme.test").role == "viewer"
    app.shot("console-members")

    page.get_by_role("link", name="Policies").click()
    preview = page.get_by_role("form", name="Permission preview")
    preview.get_by_label("Tool").fill("bash")
    preview.get_by_label("Pattern").fill("rm -rf /")
    preview.get_by_role("button", name="Preview").click()
    decision = page.get_by_role("status", name="Decision")
    decision.get_by_text("DENY", exact=True).wait_for()
    assert "org rule #1" in decision.inner_text()
    policy = page.get_by_role("form", name="Organisation policy")
    # Rows first: the saved rule is one, a second is added with the selects.
    expect(policy.get_by_role("listitem", name="Rule 1").get_by_label("Pattern")).to_have_value("rm *")
    policy.get_by_role("button", name="Add rule").click()
    second = policy.get_by_role("listitem", name="Rule 2")
    second.get_by_label("Permission").select_option("webfetch")
    second.get_by_label("Action").select_option("deny")
    page.get_by_role("button", name="Save policy").click()
    page.get_by_text("Policy saved.").wait_for()
    alice.org.refresh_from_db()
    assert alice.org.permission_policy[1] == {"permission": "webfetch", "pattern": "*", "action": "deny"}
    # The JSON view, the advanced one: a bad action is the server's 400 naming it.
    policy.get_by_role("button", name="Advanced (JSON)").click()
    bad = policy.get_by_label("Rules (JSON)")
    bad.fill('[{"permission": "bash", "pattern": "*", "action": "sometimes"}]')
    page.get_by_role("button", name="Save policy").click()
    page.get_by_text("rules[0].action").wait_for()
    app.shot("console-policies")

    page.get_by_role("link", name="Budgets").click()
    form = page.get_by_role("form", name="Set a budget")
    form.get_by_label("Hard limit ($)").fill("50")
    form.get_by_label("Soft limit ($)").fill("40")
    form.get_by_role("button", name="Set budget").click()
    page.get_by_role("cell", name="$50.00").wait_for()
    app.shot("console-budgets")

    page.get_by_role("link", name="Usage").click()
    page.locator("svg.chart").wait_for()
    assert page.locator("svg.chart rect.bar").count() == 30
    totals = page.get_by_label("Totals").inner_text()
    assert "$1.85" in totals, totals  # 0.42 + 0.08 + 0.3 + 0.9 + 0.15
    page.get_by_role("cell", name="bob@acme.test").wait_for()
    app.shot("console-usage")

    page.get_by_role("link", name="Audit log").click()
    filters = page.get_by_role("form", name="Audit filters")
    filters.get_by_label("Action").fill("member.invite")
    filters.get_by_role("button", name="Filter").click()
    expect(page.locator("table[aria-label='Audit events'] tbody tr")).to_have_count(1)
    page.get_by_role("cell", name="member.invite").wait_for()
    app.shot("console-audit")

    page.get_by_role("link", name="Single sign-on").click()
    page.get_by_text("No identity provider is set up.").wait_for()
    app.shot("console-sso")


def test_an_auditor_sees_only_what_the_role_may_read(alice, open_app):
    app = open_app(make_persona("erin@acme.test", alice.org, Role.AUDITOR, "rocket"))
    page = app.page
    page.get_by_role("link", name="Console").click()
    nav = page.get_by_role("navigation", name="Console sections")
    nav.get_by_role("link", name="Audit log").wait_for()
    labels = [link.inner_text() for link in nav.get_by_role("link").all()]
    assert labels == ["Usage", "Budgets", "Audit log", "Single sign-on"]
    page.locator("svg.chart").wait_for()  # usage is where an auditor starts
    nav.get_by_role("link", name="Single sign-on").click()
    page.get_by_text("No identity provider is set up.").wait_for()
    assert page.get_by_role("form", name="Identity provider").count() == 0  # read only
    app.shot("console-auditor")


def test_an_operator_in_no_org_lands_on_the_hosts_and_a_member_never_sees_them(alice, open_app):
    """A superuser who belongs to no org signs in to the sandbox hosts (the console lives under an org,
    which they have not); a member of an org has no Hosts link, and /operator is not theirs."""
    from hangar.conversations.host_services import HostReport, host_heartbeat

    figures = {"cpus": 4.0, "memory_mb": 16384, "disk_mb": 256000, "free_disk_mb": 90000}
    host_heartbeat(
        HostReport("box-op", ["ssd"], **figures, free_memory_mb=8000, live_sandboxes=1, org_live={})
    )
    User.objects.create_superuser("ops@platform.test", password="pw-ops@platform.test")
    operator = type("Operator", (), {"user": User.objects.get(email="ops@platform.test")})

    app = open_app(operator)
    page = app.page
    page.wait_for_url("**/operator")
    hosts = page.get_by_role("table", name="Sandbox hosts")
    expect(hosts.get_by_test_id("host").filter(has_text="box-op").get_by_test_id("host-state")).to_have_text(
        "active"
    )
    page.get_by_role("link", name="Hosts").click()  # the header's way back to it
    page.wait_for_url("**/operator")
    app.shot("operator-hosts")

    member = open_app(alice).page
    assert member.get_by_role("link", name="Hosts").count() == 0
    member.goto("/operator")
    member.get_by_text("This page is for the platform's operators.").wait_for()
    assert member.get_by_role("table", name="Sandbox hosts").count() == 0


def test_the_operator_drains_a_host_and_opens_a_session_moved_off_a_lost_one(alice, open_app):
    from hangar.audit.models import AuditEvent
    from hangar.conversations.host_services import (
        HostReport,
        host_heartbeat,
        session_moved_off_lost_host,
        session_sandbox_host_set,
    )
    from hangar.conversations.models import SandboxHost
    from hangar.conversations.services import session_create

    for name, labels in (("box-a", ["ssd"]), ("box-b", ["gpu", "large"])):
        figures = {"cpus": 8.0, "memory_mb": 32768, "disk_mb": 512000, "free_disk_mb": 300000}
        host_heartbeat(
            HostReport(name, labels, **figures, free_memory_mb=20480, live_sandboxes=3, org_live={})
        )
    session = session_create(actor=alice.actor, project=alice.project, title="Moved session")
    SandboxHost.objects.filter(name="box-b").update(state="lost")
    session_sandbox_host_set(session=session, host_name="box-b")
    told = "sandbox host box-b was lost; resumed on box-a from an empty workspace"
    session_moved_off_lost_host(session=session, lost="box-b", tell=lambda: told)
    alice.user.is_superuser = True  # the operator, and also acme's owner
    alice.user.save()

    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console")
    page.get_by_role("navigation", name="Console sections").get_by_role("link", name="Hosts").click()
    hosts = page.get_by_role("table", name="Sandbox hosts")
    box_a = hosts.get_by_test_id("host").filter(has_text="box-a")
    expect(box_a.get_by_test_id("host-state")).to_have_text("active")
    expect(hosts.get_by_test_id("host").filter(has_text="box-b").get_by_test_id("host-state")).to_have_text(
        "lost"
    )
    box_a.get_by_role("button", name="Drain box-a").click()
    expect(box_a.get_by_test_id("host-state")).to_have_text("draining")
    box_a.get_by_role("button", name="Activate box-a").wait_for()
    assert box_a.get_by_role("button", name="Drain box-a").count() == 0
    assert SandboxHost.objects.get(name="box-a").state == "draining"
    assert AuditEvent.objects.get(action="sandbox_host.drain").actor_label == alice.user.email
    app.shot("console-hosts")

    # The notice was told while no one watched: opening the session shows it, and so does a reload.
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}")
    expect(page.get_by_test_id("session-notice")).to_have_text(told)
    page.reload()
    expect(page.get_by_test_id("session-notice")).to_have_text(told)


def test_an_invitation_link_creates_the_account_once(alice, open_app):
    with transaction.atomic():
        _row, secret = invitation_create(
            actor=alice.actor, org=alice.org, email="newbie@acme.test", role=Role.MEMBER
        )
    app = open_app()
    page = app.page
    page.goto(f"/invite/{secret}")
    form = page.get_by_role("form", name="Accept invitation")
    form.get_by_text("invites newbie@acme.test as member").wait_for()
    app.shot("console-invite")
    form.get_by_label("Your name").fill("Newbie")
    form.get_by_label("Choose a password").fill("a-Long-pass-123")
    form.get_by_role("button", name="Create account and join").click()
    page.get_by_role("button", name="Sign out").wait_for()
    assert page.url.endswith("/o/acme")
    user = User.objects.get(email="newbie@acme.test")
    assert Membership.objects.get(user=user, org=alice.org).role == "member"
    again = open_app().page
    again.goto(f"/invite/{secret}")
    again.get_by_text("This invitation is accepted.").wait_for()


def test_a_refused_single_sign_on_is_explained_on_the_sign_in_page(open_app):
    page = open_app().page
    page.goto("/login?sso_error=sso_refused")
    page.get_by_role("alert").get_by_text("Single sign-on was refused.").wait_for()
    page.get_by_label("Email").fill("someone@nowhere.test")
    page.get_by_role("button", name="Use single sign-on (SSO)").click()
    page.get_by_text("No single sign-on is set up for this email's domain.").wait_for()


def test_an_admin_manages_webhooks_and_replays_a_delivery(alice, open_app, settings):
    from hangar.audit.models import AuditEvent
    from hangar.integrations.webhooks import services as hooks
    from hangar.integrations.webhooks.models import WebhookTrigger

    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console/webhooks")
    endpoints = page.get_by_role("region", name="Outgoing endpoints")
    endpoints.get_by_text("No endpoints: nothing is sent.").wait_for()
    # A loopback destination is refused by the platform (the web server allows no private ranges).
    new_endpoint = page.get_by_role("form", name="New endpoint")
    new_endpoint.get_by_label("Endpoint URL").fill("http://127.0.0.1:9/hook")
    new_endpoint.get_by_role("button", name="Add endpoint").click()
    endpoints.get_by_role("alert").filter(has_text="url").wait_for()

    triggers = page.get_by_role("region", name="Incoming triggers")
    new_trigger = page.get_by_role("form", name="New trigger")
    new_trigger.get_by_label("Name").fill("ci-failures")
    new_trigger.get_by_role("button", name="Add trigger").click()
    secret = triggers.get_by_test_id("new-secret")
    secret.wait_for()
    assert secret.inner_text().startswith("whsec_")
    trigger = WebhookTrigger.objects.get(org=alice.org, name="ci-failures")
    assert f"/hooks/in/{trigger.key}" in triggers.inner_text()

    # An endpoint made where private destinations are allowed (as the outbound tests run), and one of its
    # deliveries: the log shows it, and Replay sends it again (audited).
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = True
    endpoint, _ = hooks.endpoint_create(
        actor=alice.actor, org=alice.org, url="http://127.0.0.1:9/hook", event_types=["session.idle"]
    )
    hooks.delivery_create(
        endpoint=endpoint, event_type="session.idle", session_id="ses_x", source_event_id=1, body="{}"
    )
    log = page.get_by_role("region", name="Delivery log")
    log.get_by_role("button", name="Refresh").click()
    row = log.get_by_test_id("delivery")
    row.get_by_text("session.idle").wait_for()
    row.get_by_text("http://127.0.0.1:9/hook").wait_for()
    row.get_by_role("button", name="Replay").click()
    expect(row.get_by_test_id("delivery-status")).to_have_text("pending")
    for _ in range(50):
        if AuditEvent.objects.filter(action="webhook.delivery.replay").exists():
            break
        page.wait_for_timeout(100)
    assert AuditEvent.objects.filter(action="webhook.delivery.replay", org_id=alice.org.pk).count() == 1
    app.shot("console-webhooks")


def test_an_admin_edits_a_projects_rules_and_egress_and_the_model_allow_list(alice, open_app):
    from hangar.projects.models import Project
    from hangar.usage.models import ModelAllowList

    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console/policies")
    form = page.get_by_role("form", name="Project rules")
    form.get_by_role("group", name="Permission rules").get_by_role("button", name="Advanced (JSON)").click()
    rules = form.get_by_label("Permission rules (JSON)")
    rules.fill('[{"permission": "bash", "pattern": "rm *", "action": "maybe"}]')
    form.get_by_role("button", name="Save project rules").click()
    form.get_by_role("alert").filter(has_text="permission_rules[0].action").wait_for()

    rules.fill('[{"permission": "bash", "pattern": "rm *", "action": "deny"}]')
    form.get_by_role("group", name="Egress allow-list").get_by_role("button", name="Advanced (JSON)").click()
    egress = form.get_by_label("Egress allow-list (JSON)")
    egress.fill('["169.254.169.254"]')
    form.get_by_role("button", name="Save project rules").click()
    form.get_by_role("alert").filter(has_text="network_allowlist[0]").wait_for()
    assert Project.objects.get(pk=alice.project.pk).permission_rules == []  # nothing half-written

    egress.fill('["pypi.org", "github.com:443"]')
    form.get_by_role("button", name="Save project rules").click()
    form.get_by_text("Project rules saved.").wait_for()
    project = Project.objects.get(pk=alice.project.pk)
    assert project.permission_rules == [{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    assert project.network_allowlist == ["pypi.org", "github.com:443"]

    allowlist = page.get_by_role("form", name="Model allow-list")
    allowlist.get_by_label("Allowed models").fill("openai/gpt-4o\n  scripted/fast \n\n")
    allowlist.get_by_role("button", name="Save allow-list").click()
    allowlist.get_by_text("Allow-list saved.").wait_for()
    assert ModelAllowList.objects.get(org=alice.org).allowed == ["openai/gpt-4o", "scripted/fast"]
    app.shot("console-policies-projects")


def test_an_admin_sets_the_orgs_instructions_and_a_projects_agents(alice, open_app):
    from hangar.projects.models import Project

    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console/agents")
    instructions = page.get_by_role("form", name="Organisation instructions")
    expect(instructions.get_by_label("Instructions")).to_be_enabled()  # loaded: typing is not overwritten
    instructions.get_by_label("Instructions").fill("Write tests first.\nAnswer briefly.")
    instructions.get_by_role("button", name="Save instructions").click()
    instructions.get_by_text("Instructions saved.").wait_for()
    alice.org.refresh_from_db()
    assert alice.org.instructions == "Write tests first.\nAnswer briefly."

    agents = page.get_by_role("form", name="Project agents")
    agents.get_by_role("button", name="Advanced (JSON)").click()
    text = agents.get_by_label("Agents (JSON)")
    expect(text).to_have_value("{}")
    text.fill('{"reviewer": {"description": "Reviews", "mode": "boss", "prompt": "Review."}}')
    agents.get_by_role("button", name="Save agents").click()
    agents.get_by_role("alert").filter(has_text="mode").wait_for()
    assert Project.objects.get(pk=alice.project.pk).agents == {}  # nothing half-written

    # The project list the page reloads after a save is held until the admin has typed again: its
    # late answer must not overwrite what was typed (it did, and the save sent the old description).
    held = []
    page.route(
        "**/api/orgs/acme/projects/",
        lambda route: held.append(route) if route.request.method == "GET" else route.continue_(),
    )
    text.fill('{"reviewer": {"description": "Reviews", "mode": "subagent", "prompt": "Review."}}')
    agents.get_by_role("button", name="Save agents").click()
    agents.get_by_text("Agents saved.").wait_for()
    saved = Project.objects.get(pk=alice.project.pk).agents
    assert saved["reviewer"]["mode"] == "subagent" and saved["reviewer"]["prompt"] == "Review."
    # Back to the rows: the agent is one, its fields editable there.
    agents.get_by_role("button", name="Back to rows").click()
    row = agents.get_by_role("listitem", name="Agent reviewer")
    expect(row.get_by_label("Mode", exact=True)).to_have_value("subagent")
    row.get_by_label("Description").fill("Reviews diffs")
    expect(agents.get_by_text("Agents saved.")).to_be_hidden()  # an edit since: no longer what is saved
    assert len(held) == 1
    with page.expect_response("**/api/orgs/acme/projects/"):
        held[0].continue_()
    page.unroute("**/api/orgs/acme/projects/")
    expect(row.get_by_label("Description")).to_have_value("Reviews diffs")
    agents.get_by_role("button", name="Save agents").click()
    agents.get_by_text("Agents saved.").wait_for()
    assert Project.objects.get(pk=alice.project.pk).agents["reviewer"]["description"] == "Reviews diffs"
    app.shot("console-agents")


def test_an_admin_copies_a_new_invitations_link_and_cannot_invite_the_address_twice(alice, open_app):
    app = open_app(alice)
    app.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = app.page
    page.goto("/o/acme/console/members")
    invite = page.get_by_role("form", name="Invite a member")
    invite.get_by_label("Email").fill("newbie@acme.test")
    invite.get_by_role("button", name="Send invitation").click()
    page.get_by_text("Invitation sent to newbie@acme.test.").wait_for()
    link = page.get_by_label("Invitation link").input_value()
    assert "/invite/" in link
    page.get_by_role("button", name="Copy link").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == link
    app.shot("console-invite-link")
    # The link works: it opens the invitation for that address.
    visitor = open_app().page
    visitor.goto("/invite/" + link.split("/invite/", 1)[1])  # PUBLIC_URL may name another host
    visitor.get_by_text("invites newbie@acme.test as member").wait_for()

    invite.get_by_label("Email").fill("newbie@acme.test")
    invite.get_by_role("button", name="Send invitation").click()
    page.get_by_role("alert").filter(has_text="already has a pending invitation").wait_for()
    assert Invitation.objects.filter(email="newbie@acme.test").count() == 1
