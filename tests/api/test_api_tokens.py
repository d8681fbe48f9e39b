"""Tokens over the API: shown once, listed without the digest, revoked by their owner or an admin."""

from datetime import timedelta

from django.utils import timezone

from hangar.accounts.models import ApiToken


def test_bob_creates_a_token_that_is_shown_once_and_works(api, bob):
    response = api(bob).post("/api/orgs/acme/tokens/", {"name": "laptop"}, format="json")
    assert response.status_code == 201
    raw = response.json()["token"]
    assert raw.startswith(response.json()["prefix"] + "_")
    listed = api(bob).get("/api/orgs/acme/tokens/").json()
    assert all("token" not in row and "digest" not in row for row in listed)
    assert raw not in str(listed)
    me = api(bob).get("/api/me", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert me.status_code == 200 and me.json()["token_org"] == "acme"


def test_a_token_list_has_prefix_name_dates_and_never_the_digest(api, alice):
    row = api(alice).get("/api/orgs/acme/tokens/").json()[0]
    assert set(row) == {
        "id",
        "name",
        "prefix",
        "user",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    }


def test_bob_sees_only_his_own_tokens_and_alice_sees_all(api, alice, bob):
    assert {t["user"] for t in api(bob).get("/api/orgs/acme/tokens/").json()} == {"bob@acme.test"}
    assert {t["user"] for t in api(alice).get("/api/orgs/acme/tokens/").json()} == {
        "alice@acme.test",
        "bob@acme.test",
    }


def test_dave_the_viewer_may_create_his_own_token(api, dave):
    assert api(dave).post("/api/orgs/acme/tokens/", {"name": "ci"}, format="json").status_code == 201


def test_bob_cannot_revoke_alices_token(api, alice, bob):
    response = api(bob).delete(f"/api/orgs/acme/tokens/{alice.token_row.pk}")
    assert response.status_code == 404
    assert ApiToken.objects.get(pk=alice.token_row.pk).revoked_at is None


def test_alice_revokes_bobs_token_and_it_gets_401(api, alice, bob):
    response = api(alice).delete(f"/api/orgs/acme/tokens/{bob.token_row.pk}")
    assert response.status_code == 200 and response.json()["revoked_at"]
    denied = api(bob).get("/api/me")
    assert denied.status_code == 401
    assert denied.json()["error"]["message"] == "Token has been revoked."


def test_bob_revokes_his_own_token(api, bob):
    assert api(bob).delete(f"/api/orgs/acme/tokens/{bob.token_row.pk}").status_code == 200


def test_a_past_expiry_is_a_400_naming_expires_at(api, bob):
    past = (timezone.now() - timedelta(hours=1)).isoformat()
    response = api(bob).post("/api/orgs/acme/tokens/", {"name": "x", "expires_at": past}, format="json")
    assert response.status_code == 400 and "expires_at" in response.json()["error"]["fields"]


def test_a_future_expiry_is_stored(api, bob):
    future = timezone.now() + timedelta(days=1)
    response = api(bob).post(
        "/api/orgs/acme/tokens/", {"name": "x", "expires_at": future.isoformat()}, format="json"
    )
    assert response.status_code == 201
    assert ApiToken.objects.get(pk=response.json()["id"]).expires_at == future


def test_an_expiring_token_cannot_mint_a_token_that_outlives_it(api, bob):
    soon = timezone.now() + timedelta(hours=1)
    ApiToken.objects.filter(pk=bob.token_row.pk).update(expires_at=soon)
    forever = api(bob).post("/api/orgs/acme/tokens/", {"name": "forever"}, format="json")
    assert forever.status_code == 400 and "expires_at" in forever.json()["error"]["fields"]
    later = (soon + timedelta(days=1)).isoformat()
    assert (
        api(bob)
        .post("/api/orgs/acme/tokens/", {"name": "later", "expires_at": later}, format="json")
        .status_code
        == 400
    )
    within = (soon - timedelta(minutes=5)).isoformat()
    assert (
        api(bob)
        .post("/api/orgs/acme/tokens/", {"name": "ok", "expires_at": within}, format="json")
        .status_code
        == 201
    )


def test_token_creation_is_rate_limited(api, bob):
    statuses = [
        api(bob).post("/api/orgs/acme/tokens/", {"name": f"t{i}"}, format="json").status_code
        for i in range(31)
    ]
    assert statuses[:30] == [201] * 30 and statuses[30] == 429
