"""In a real browser: an admin sets a project's headless ask policy (route a webhook run's asks to a
member, with an expiry; an allow-list for Slack), a member keeps their own permission rules, and a routed
ask shows in the approver's notice as theirs with its expiry. Screenshots in var/screenshots/headless-*."""

from datetime import timedelta

import pytest
from django.utils import timezone

from hangar.accounts.models import Membership
from hangar.conversations.models import PermissionRequest
from hangar.conversations.services import session_create
from hangar.projects.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_admin_routes_webhook_asks_and_allow_lists_slack_from_the_project_settings(alice, bob, open_app):
    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/settings")
    form = page.get_by_role("form", name="When no one is watching")
    form.get_by_label("Webhooks mode").select_option("route")
    form.get_by_label("Webhooks expiry").fill("900")
    form.get_by_role("group", name="Webhooks approvers").get_by_label(bob.user.email).check()
    form.get_by_label("Slack mode").select_option("allow_listed")
    slack = form.get_by_role("group", name="Slack asks")
    slack.get_by_role("button", name="Add rule").click()
    row = slack.get_by_role("listitem", name="Rule 1")
    row.get_by_label("Pattern").fill("git status*")
    row.get_by_label("Action").select_option("allow")
    form.get_by_label("Slack reason").fill("Only git status from Slack.")
    form.get_by_role("button", name="Save when no one is watching").click()
    form.get_by_role("status").get_by_text("Saved.").wait_for()
    app.shot("headless-policy")
    assert Project.objects.get(pk=alice.project.pk).headless_policy == {
        "webhook": {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 900},
        "slack": {
            "mode": "allow_listed",
            "rules": [{"permission": "bash", "pattern": "git status*", "action": "allow"}],
            "reason": "Only git status from Slack.",
        },
    }

    # A bad value: the 400 names the field and the form keeps it.
    form.get_by_label("Webhooks expiry").fill("99999999")  # over a week
    form.get_by_role("button", name="Save when no one is watching").click()
    form.get_by_role("alert").filter(has_text="expire_after_s").wait_for()
    assert Project.objects.get(pk=alice.project.pk).headless_policy["webhook"]["expire_after_s"] == 900


def test_a_member_keeps_their_own_rules_and_sees_an_ask_routed_to_them(alice, bob, open_app):
    app = open_app(bob)
    page = app.page
    page.goto("/o/acme/settings")
    mine = page.get_by_role("form", name="My permission rules")
    mine.get_by_role("button", name="Add rule").click()
    row = mine.get_by_role("listitem", name="Rule 1")
    row.get_by_label("Pattern").fill("git push*")
    row.get_by_label("Action").select_option("deny")
    mine.get_by_role("button", name="Save my rules").click()
    mine.get_by_role("status").get_by_text("Saved.").wait_for()
    assert Membership.objects.get(user=bob.user, org=bob.org).permission_rules == [
        {"permission": "bash", "pattern": "git push*", "action": "deny"}
    ]

    session = session_create(
        actor=alice.actor, project=alice.project, title="Nightly CI fix", source="webhook"
    )
    PermissionRequest.objects.create(
        session=session,
        permission="bash",
        patterns=["make deploy"],
        approvers=[bob.user.pk],
        expires_at=timezone.now() + timedelta(minutes=15),
    )
    page.goto("/o/acme")
    page.get_by_role("button", name="1 waiting for you").click()
    listed = page.get_by_role("list", name="Waiting for you")
    listed.get_by_text("routed to you").wait_for()
    listed.get_by_text("expires").wait_for()
    app.shot("headless-notice")
