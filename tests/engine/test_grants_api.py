"""Stored "always" grants are visible and revocable through the API, and only to their own org."""

import pytest

from hangar.conversations.models import PermissionGrant
from hangar.conversations.services import session_create

pytestmark = pytest.mark.django_db


def grants_url(persona, project=None):
    project = project or persona.project
    return f"/api/orgs/{persona.org.slug}/projects/{project.pk}/permission-grants/"


@pytest.fixture
def grant(alice):
    session = session_create(
        actor=alice.actor, project=alice.project, model={"providerID": "x", "modelID": "y"}
    )
    return PermissionGrant.objects.create(
        org=alice.org,
        project=alice.project,
        session=session,
        scope="session",
        permission="bash",
        pattern="npm test*",
        created_by=alice.user,
    )


def test_a_member_lists_the_projects_grants(api, bob, grant):
    response = api(bob).get(grants_url(bob))
    assert response.status_code == 200
    assert [(g["permission"], g["pattern"], g["scope"]) for g in response.json()] == [
        ("bash", "npm test*", "session")
    ]


def test_a_member_revokes_a_grant_and_it_disappears_from_the_list(api, bob, grant):
    response = api(bob).delete(grants_url(bob) + str(grant.pk))
    assert response.status_code == 200 and response.json()["revokedAt"]
    assert api(bob).get(grants_url(bob)).json() == []
    grant.refresh_from_db()
    assert grant.revoked_at is not None


def test_another_org_cannot_see_or_revoke_the_grants(api, alice, charlie, grant):
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/permission-grants/"
    assert api(charlie).get(url).status_code == 404
    assert api(charlie).delete(url + str(grant.pk)).status_code == 404
    assert api(charlie).delete(grants_url(charlie) + str(grant.pk)).status_code == 404
    grant.refresh_from_db()
    assert grant.revoked_at is None
