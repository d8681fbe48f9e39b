"""The org's home in a real browser: a prompt box with a project picker starts a session in the picked
project with that prompt and opens it; the org's recent sessions across its projects are listed by name
and project. Screenshots at desktop and phone width (var/screenshots/org-home-*)."""

import pytest
from playwright.sync_api import expect

from hangar.conversations.models import Message, Part, Session
from hangar.conversations.services import session_create
from hangar.projects.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_home_starts_a_session_in_the_picked_project_and_lists_recent_ones(
    alice, charlie, open_app, scripted_credential, sessions_made
):
    scripted_credential(alice)
    probe = Project.objects.create(org=alice.org, slug="probe", name="probe", default_model="scripted/m1")
    session_create(actor=alice.actor, project=alice.project, title="Fix the login bug")
    session_create(actor=charlie.actor, project=charlie.project, title="Globex's secret")
    app = open_app(alice)
    page = app.page
    recent = page.get_by_role("region", name="Recent sessions")
    recent.get_by_role("link", name="Fix the login bug", exact=False).wait_for()
    assert "rocket" in recent.inner_text() and "Globex" not in recent.inner_text()
    app.shot("org-home")

    form = page.get_by_role("form", name="Start a session")
    expect(form.get_by_label("Project")).to_have_value(str(alice.project.pk))  # the newest session's
    form.get_by_label("Project").select_option(label="probe")
    form.get_by_label("What should the agent do?").fill("Add a health check endpoint")
    form.get_by_role("button", name="Start session").click()
    page.wait_for_url(f"**/o/acme/p/{probe.pk}/s/ses_*")
    session_id = page.url.rsplit("/s/", 1)[1]
    sessions_made.append(session_id)
    session = Session.objects.get(pk=session_id)
    assert session.project_id == probe.pk
    user = Message.objects.get(session=session, role="user")
    assert (
        Part.objects.filter(message=user, type="text").first().data["text"] == "Add a health check endpoint"
    )
    page.get_by_text("Add a health check endpoint").first.wait_for()
