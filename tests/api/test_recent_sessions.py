"""The org's recent sessions (the web app's home): the newest live root sessions across the org's projects,
each naming its project; never another org's, never archived ones or subagent children."""

import pytest

from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.projects.models import Project

pytestmark = pytest.mark.django_db

RECENT = "/api/orgs/{org}/sessions/recent"


def test_the_recent_sessions_span_the_orgs_projects_newest_first(api, alice, bob, charlie):
    other = Project.objects.create(org=alice.org, slug="probe", name="probe")
    first = session_create(actor=alice.actor, project=alice.project, title="first")
    session_create(actor=bob.actor, project=other, title="second")
    session_create(actor=alice.actor, project=alice.project, title="child", parent=first)
    archived = session_create(actor=alice.actor, project=alice.project, title="archived")
    Session.objects.filter(pk=archived.pk).update(archived_at=archived.created_at)
    session_create(actor=charlie.actor, project=charlie.project, title="globex's")
    response = api(alice).get(RECENT.format(org="acme"))
    assert response.status_code == 200, response.content
    assert [(s["title"], s["project"]) for s in response.json()] == [
        ("second", other.pk),
        ("first", alice.project.pk),
    ]
    assert [s["title"] for s in api(alice).get(RECENT.format(org="acme") + "?limit=1").json()] == ["second"]
    assert api(alice).get(RECENT.format(org="acme") + "?limit=0").status_code == 400


def test_another_org_gets_a_404_for_the_recent_sessions(api, alice, charlie):
    session_create(actor=alice.actor, project=alice.project, title="secret plans")
    assert api(charlie).get(RECENT.format(org="acme")).status_code == 404
    assert api(charlie).get(RECENT.format(org="globex")).json() == []
