"""A project's OpenCode base URL answers only tokens of the org that owns the project."""

import pytest

from hangar.accounts.models import Membership, Role
from tests.opencode.conftest import base_url

pytestmark = pytest.mark.django_db


def test_it_accepts_basic_auth_whose_password_is_the_token(oc, alice):
    response = oc(alice).get(f"{base_url(alice)}/config")
    assert response.status_code == 200


def test_it_accepts_bearer_tokens(oc, alice):
    response = oc(alice, bearer=True).get(f"{base_url(alice)}/config")
    assert response.status_code == 200


def test_it_accepts_a_member_of_the_owning_org(oc, alice, bob):
    assert oc(bob).get(f"{base_url(alice)}/session").status_code == 200


def test_it_challenges_a_caller_without_credentials(oc, alice):
    response = oc().get(f"{base_url(alice)}/session")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Basic")


def test_it_rejects_a_wrong_token(oc, alice):
    response = oc(token="hgr_nope_nope").get(f"{base_url(alice)}/session")
    assert response.status_code == 401


def test_it_hides_another_orgs_project_as_not_found(oc, alice, charlie):
    response = oc(charlie).get(f"{base_url(alice)}/session")
    assert response.status_code == 404
    assert response.json()["name"] == "NotFoundError"


def test_a_missing_project_looks_the_same_as_a_foreign_one(oc, charlie):
    assert oc(charlie).get("/oc/999999/session").status_code == 404
    assert oc(charlie).get("/oc/not-a-number/session").status_code == 404


def test_it_hides_the_project_from_a_token_whose_user_left_the_org(oc, alice, bob):
    Membership.objects.filter(user=bob.user).delete()
    assert oc(bob).get(f"{base_url(alice)}/session").status_code == 404


def test_a_viewer_may_read_but_not_create_sessions(oc, alice, bob):
    Membership.objects.filter(user=bob.user).update(role=Role.VIEWER)
    assert oc(bob).get(f"{base_url(alice)}/session").status_code == 200
    response = oc(bob).post(f"{base_url(alice)}/session", {}, format="json")
    assert response.status_code == 403


def test_the_event_stream_hides_another_orgs_project(oc, alice, charlie):
    assert oc(charlie).get(f"{base_url(alice)}/event").status_code == 404
    assert oc().get(f"{base_url(alice)}/event").status_code == 401


def test_a_token_of_another_org_is_404_even_when_its_user_belongs_to_both(oc, alice, charlie):
    # The project is joined on the token's own org: charlie's globex token never reaches acme's projects.
    Membership.objects.create(org=alice.org, user=charlie.user, role=Role.OWNER)
    for route in ("/config", "/session", "/event"):
        response = oc(charlie).get(f"{base_url(alice)}{route}")
        assert response.status_code == 404 and response.json()["name"] == "NotFoundError", route
    assert oc(charlie).post(f"{base_url(alice)}/session", {}, format="json").status_code == 404


def test_a_foreign_project_answers_exactly_like_a_missing_one(oc, alice, charlie):
    foreign = oc(charlie).get(f"/oc/{alice.project.pk}/config")
    missing = oc(charlie).get("/oc/999999/config")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["data"]["message"].replace(str(alice.project.pk), "N") == missing.json()["data"][
        "message"
    ].replace("999999", "N")


@pytest.mark.parametrize("route", ["/config", "/event"])
def test_a_revoked_or_expired_token_is_401_saying_so_in_opencodes_shape(oc, alice, route):
    from datetime import timedelta

    from django.utils import timezone

    from hangar.accounts.models import ApiToken

    ApiToken.objects.filter(pk=alice.token_row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = oc(alice).get(f"{base_url(alice)}{route}")
    assert response.status_code == 401
    assert response.json() == {"name": "UnauthorizedError", "data": {"message": "Token has expired."}}
    ApiToken.objects.filter(pk=alice.token_row.pk).update(revoked_at=timezone.now())
    response = oc(alice).get(f"{base_url(alice)}{route}")
    assert response.json() == {"name": "UnauthorizedError", "data": {"message": "Token has been revoked."}}


def test_a_viewer_cannot_prompt(oc, alice, bob):
    from hangar.conversations.services import session_create

    session = session_create(actor=alice.actor, project=alice.project, title="t")
    Membership.objects.filter(user=bob.user).update(role=Role.VIEWER)
    response = oc(bob).post(
        f"{base_url(alice)}/session/{session.pk}/prompt_async",
        {"parts": [{"type": "text", "text": "hi"}]},
        format="json",
    )
    assert response.status_code == 403 and response.json()["name"] == "ForbiddenError"


def test_token_user_membership_and_project_are_one_query(oc, alice, django_assert_num_queries):
    client = oc(alice)
    client.get(f"{base_url(alice)}/config")  # stamps last_used_at (at most once a minute)
    with django_assert_num_queries(1):
        assert client.get(f"{base_url(alice)}/config").status_code == 200
