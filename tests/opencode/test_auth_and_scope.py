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
