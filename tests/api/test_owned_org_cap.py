"""Anyone with an account can create an org and own it, and every per-org cap (runs, sandboxes, disk) is
multiplied by the orgs one person owns: the operator caps how many orgs one account may own
(HANGAR_USER_MAX_OWNED_ORGS). Past it, creating an org and being made an owner are refused with a clear
error, and nothing is written."""

import pytest
from rest_framework.test import APIClient

from hangar.accounts.models import Membership, Org

pytestmark = pytest.mark.django_db


def signed_in(persona) -> APIClient:
    client = APIClient()
    client.force_login(persona.user)
    return client


def test_an_account_cannot_own_more_orgs_than_the_operator_allows(bob, settings):
    settings.HANGAR_USER_MAX_OWNED_ORGS = 2
    for name in ("Lab one", "Lab two"):
        assert signed_in(bob).post("/api/orgs/", {"name": name}, format="json").status_code == 201
    response = signed_in(bob).post("/api/orgs/", {"name": "Lab three"}, format="json")
    assert response.status_code == 403
    assert "own 2 orgs" in response.json()["error"]["message"]
    assert not Org.objects.filter(slug="lab-three").exists()


def test_an_account_at_the_cap_cannot_be_made_an_owner_either(api, alice, bob, settings):
    settings.HANGAR_USER_MAX_OWNED_ORGS = 1
    assert signed_in(bob).post("/api/orgs/", {"name": "Bob's"}, format="json").status_code == 201
    response = api(alice).patch(
        f"/api/orgs/acme/members/{bob.membership.pk}", {"role": "owner"}, format="json"
    )
    assert response.status_code == 403
    assert Membership.objects.get(pk=bob.membership.pk).role == "member"
