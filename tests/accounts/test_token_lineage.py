"""Low: a token minted by a token dies with its parent. Revoking a leaked token must also cut off every
token that was minted with it (and those minted by them), or the leak survives its own revocation."""

from hangar.accounts.models import ApiToken


def _mint(api, raw: str, name: str) -> dict:
    # api() without a persona: a persona's client would send its own token over this header.
    response = api().post(
        "/api/orgs/acme/tokens/", {"name": name}, format="json", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )
    assert response.status_code == 201
    return response.json()


def test_a_token_minted_by_a_token_dies_when_its_parent_is_revoked(api, alice, bob):
    child = _mint(api, bob.token, "child")
    grandchild = _mint(api, child["token"], "grandchild")
    assert api(bob).delete(f"/api/orgs/acme/tokens/{bob.token_row.pk}").status_code == 200
    for raw in (child["token"], grandchild["token"]):
        denied = api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
        assert denied.status_code == 401
        assert denied.json()["error"]["message"] == "Token has been revoked."
    assert (
        ApiToken.objects.filter(pk__in=[child["id"], grandchild["id"]], revoked_at__isnull=True).count() == 0
    )


def test_revoking_a_child_token_leaves_its_parent_and_siblings_alone(api, alice, bob):
    first = _mint(api, bob.token, "first")
    second = _mint(api, bob.token, "second")
    assert api(alice).delete(f"/api/orgs/acme/tokens/{first['id']}").status_code == 200
    assert api(bob).get("/api/me").status_code == 200
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {second['token']}").status_code == 200


def test_a_token_minted_by_a_signed_in_person_has_no_parent(api, alice, bob):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(bob.user)
    created = client.post("/api/orgs/acme/tokens/", {"name": "from-browser"}, format="json").json()
    assert api(bob).delete(f"/api/orgs/acme/tokens/{bob.token_row.pk}").status_code == 200
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {created['token']}").status_code == 200
