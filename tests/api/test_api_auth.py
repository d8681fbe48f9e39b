"""Browser login with a session cookie and CSRF, logout, /api/me, and the auth rate limit."""

from rest_framework.test import APIClient

from hangar.accounts.models import Membership, Role


def login(client, email="alice@acme.test", password="pw-alice@acme.test"):
    return client.post("/api/auth/login", {"email": email, "password": password}, format="json")


def test_alice_logs_in_and_the_session_cookie_reaches_her_org(alice, fresh_ip_client):
    client = fresh_ip_client()
    response = login(client)
    assert response.status_code == 200
    assert response.json()["orgs"] == [{"org": "acme", "org_name": "Acme", "role": "owner"}]
    assert "sessionid" in response.cookies
    assert client.get("/api/orgs/acme/projects/").status_code == 200


def test_a_wrong_password_is_a_401_with_a_clear_body(alice, fresh_ip_client):
    response = login(fresh_ip_client(), password="nope")
    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "invalid_credentials", "message": "Invalid email or password."}
    }


def test_login_without_a_csrf_token_is_refused_and_with_one_succeeds(alice):
    client = APIClient(enforce_csrf_checks=True, REMOTE_ADDR="10.9.9.1")
    refused = login(client)
    assert refused.status_code == 403 and "CSRF" in refused.json()["error"]["message"]
    csrf = client.get("/api/auth/csrf").json()["csrf_token"]
    accepted = client.post(
        "/api/auth/login",
        {"email": "alice@acme.test", "password": "pw-alice@acme.test"},
        format="json",
        HTTP_X_CSRFTOKEN=csrf,
    )
    assert accepted.status_code == 200


def test_a_cookie_session_write_needs_csrf(alice):
    client = APIClient(enforce_csrf_checks=True, REMOTE_ADDR="10.9.9.2")
    csrf = client.get("/api/auth/csrf").json()["csrf_token"]
    client.post(
        "/api/auth/login",
        {"email": "alice@acme.test", "password": "pw-alice@acme.test"},
        format="json",
        HTTP_X_CSRFTOKEN=csrf,
    )
    no_token = client.post("/api/orgs/acme/projects/", {"name": "x"}, format="json")
    assert no_token.status_code == 403
    csrf = client.cookies["csrftoken"].value  # rotated at login
    with_token = client.post("/api/orgs/acme/projects/", {"name": "x"}, format="json", HTTP_X_CSRFTOKEN=csrf)
    assert with_token.status_code == 201


def test_the_21st_login_attempt_in_a_minute_is_429(alice, fresh_ip_client):
    client = fresh_ip_client()
    statuses = [login(client, password="wrong").status_code for _ in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    assert login(client).status_code == 429  # even the right password waits


def test_logout_ends_the_session(alice, fresh_ip_client):
    client = fresh_ip_client()
    login(client)
    assert client.post("/api/auth/logout").status_code == 204
    assert client.get("/api/me").status_code in (401, 403)


def test_me_lists_every_org_for_a_cookie_but_only_the_token_org_for_a_token(
    api, alice, charlie, fresh_ip_client
):
    Membership.objects.create(org=charlie.org, user=alice.user, role=Role.VIEWER)
    client = fresh_ip_client()
    login(client)
    assert [o["org"] for o in client.get("/api/me").json()["orgs"]] == ["acme", "globex"]
    by_token = api(alice).get("/api/me").json()
    assert [o["org"] for o in by_token["orgs"]] == ["acme"] and by_token["token_org"] == "acme"


def test_each_persona_sees_only_its_orgs(api, alice, bob, dave, charlie):
    for persona, org in ((alice, "acme"), (bob, "acme"), (dave, "acme"), (charlie, "globex")):
        assert [o["slug"] for o in api(persona).get("/api/orgs/").json()] == [org]
        assert api(persona).get(f"/api/orgs/{org}/").json()["role"] == persona.membership.role


def signed_in(persona) -> APIClient:
    client = APIClient()
    client.force_login(persona.user)
    return client


def test_bob_creates_an_org_and_owns_it(api, bob):
    response = signed_in(bob).post("/api/orgs/", {"name": "Bob's Lab"}, format="json")
    assert response.status_code == 201 and response.json()["slug"] == "bobs-lab"
    assert Membership.objects.get(org__slug="bobs-lab").user == bob.user


def test_creating_an_org_with_a_taken_slug_is_a_400(api, bob, charlie):
    response = signed_in(bob).post("/api/orgs/", {"name": "x", "slug": "globex"}, format="json")
    assert response.status_code == 400 and "slug" in response.json()["error"]["fields"]


def test_a_token_cannot_create_an_org_outside_the_one_it_is_bound_to(api, bob):
    response = api(bob).post("/api/orgs/", {"name": "Escape"}, format="json")
    assert response.status_code == 403
    assert not Membership.objects.filter(org__slug="escape").exists()


def test_anonymous_me_and_orgs_are_401(api):
    assert api().get("/api/me").status_code == 401
    assert api().get("/api/orgs/").status_code == 401
