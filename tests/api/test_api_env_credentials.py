"""Project env vars and provider credentials over the API: secrets are write-only, keys never come back."""

import json
import logging

from hangar.projects.models import ProjectEnvVar, ProviderCredential

KEY = "sk-live-THIS-IS-THE-SECRET-9f3a"
NO_SCOPE = {"setup": False, "commands": [], "mcp": []}


def env_url(persona, name=""):
    return f"/api/orgs/acme/projects/{persona.project.pk}/env/{name}"


def test_alice_sets_a_secret_and_a_plain_var_and_only_the_plain_value_comes_back(api, alice, bob, dave):
    assert api(alice).put(
        env_url(alice, "DB_PASSWORD"), {"value": "hunter2-secret"}, format="json"
    ).json() == {"name": "DB_PASSWORD", "secret": True, "value": None, "scope": NO_SCOPE}
    assert (
        api(alice)
        .put(env_url(alice, "LOG_LEVEL"), {"value": "debug", "secret": False}, format="json")
        .status_code
        == 200
    )
    for persona in (alice, bob, dave):
        listed = api(persona).get(env_url(alice)).json()
        assert listed == [
            {"name": "DB_PASSWORD", "secret": True, "value": None, "scope": NO_SCOPE},
            {"name": "LOG_LEVEL", "secret": False, "value": "debug", "scope": NO_SCOPE},
        ]
        assert "hunter2" not in json.dumps(api(persona).get(env_url(alice, "DB_PASSWORD")).json())
    stored = ProjectEnvVar.objects.get(name="DB_PASSWORD").value_encrypted
    assert "hunter2" not in stored


def test_bob_and_dave_cannot_set_or_delete_env_vars(api, alice, bob, dave):
    api(alice).put(env_url(alice, "X"), {"value": "1"}, format="json")
    for persona in (bob, dave):
        assert api(persona).put(env_url(alice, "X"), {"value": "2"}, format="json").status_code == 403
        assert api(persona).delete(env_url(alice, "X")).status_code == 403


def test_alice_deletes_an_env_var_and_then_it_is_404(api, alice):
    api(alice).put(env_url(alice, "X"), {"value": "1"}, format="json")
    assert api(alice).delete(env_url(alice, "X")).status_code == 204
    assert api(alice).get(env_url(alice, "X")).status_code == 404


def test_a_bad_env_name_is_a_400_naming_name(api, alice):
    response = api(alice).put(env_url(alice, "1-BAD"), {"value": "x"}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["name"]


def test_a_missing_value_is_a_400_naming_value(api, alice):
    response = api(alice).put(env_url(alice, "OK"), {"secret": True}, format="json")
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["value"]


def test_alice_stores_an_org_credential_and_the_key_never_comes_back(api, alice, bob, dave, caplog):
    caplog.set_level(logging.DEBUG)
    response = api(alice).post(
        "/api/orgs/acme/credentials/",
        {"provider": "local", "api_key": KEY, "api_base": "http://llm:8080/v1", "models": ["qwen"]},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["has_api_key"] is True and body["api_key_hint"] == "…9f3a" and body["scope"] == "org"
    assert body["api_base"] == "http://llm:8080/v1" and body["models"] == ["qwen"]
    for persona in (alice, bob, dave):
        assert KEY not in json.dumps(api(persona).get("/api/orgs/acme/credentials/").json())
        assert KEY not in json.dumps(api(persona).get(f"/api/orgs/acme/credentials/{body['id']}").json())
    assert KEY not in ProviderCredential.objects.get(pk=body["id"]).api_key_encrypted
    assert KEY not in caplog.text


def test_bob_keeps_a_personal_credential_that_alice_sees_but_dave_does_not(api, alice, bob, dave):
    response = api(bob).post(
        "/api/orgs/acme/credentials/", {"provider": "openai", "api_key": KEY, "scope": "user"}, format="json"
    )
    assert response.status_code == 200 and response.json()["user"] == "bob@acme.test"
    assert [c["user"] for c in api(alice).get("/api/orgs/acme/credentials/").json()] == ["bob@acme.test"]
    assert api(dave).get("/api/orgs/acme/credentials/").json() == []
    assert api(dave).get(f"/api/orgs/acme/credentials/{response.json()['id']}").status_code == 404


def test_bob_cannot_set_an_org_credential_and_dave_cannot_set_any(api, bob, dave):
    org_level = api(bob).post(
        "/api/orgs/acme/credentials/", {"provider": "openai", "api_key": KEY}, format="json"
    )
    assert org_level.status_code == 403
    personal = api(dave).post(
        "/api/orgs/acme/credentials/", {"provider": "openai", "api_key": KEY, "scope": "user"}, format="json"
    )
    assert personal.status_code == 403


def test_alice_rotates_the_key_and_updates_models_and_deletes(api, alice):
    created = (
        api(alice)
        .post("/api/orgs/acme/credentials/", {"provider": "openai", "api_key": KEY}, format="json")
        .json()
    )
    url = f"/api/orgs/acme/credentials/{created['id']}"
    updated = (
        api(alice)
        .patch(url, {"api_key": "sk-new-key-000000wxyz", "models": ["gpt-4o"]}, format="json")
        .json()
    )
    assert updated["api_key_hint"] == "…wxyz" and updated["models"] == ["gpt-4o"]
    assert api(alice).delete(url).status_code == 204
    assert api(alice).get(url).status_code == 404


def test_bob_cannot_touch_an_org_credential(api, alice, bob):
    created = (
        api(alice)
        .post("/api/orgs/acme/credentials/", {"provider": "openai", "api_key": KEY}, format="json")
        .json()
    )
    url = f"/api/orgs/acme/credentials/{created['id']}"
    assert api(bob).patch(url, {"api_key": "sk-evil"}, format="json").status_code == 403
    assert api(bob).delete(url).status_code == 403


def test_an_admin_may_remove_a_members_personal_credential(api, alice, bob):
    created = (
        api(bob)
        .post(
            "/api/orgs/acme/credentials/",
            {"provider": "openai", "api_key": KEY, "scope": "user"},
            format="json",
        )
        .json()
    )
    assert api(alice).delete(f"/api/orgs/acme/credentials/{created['id']}").status_code == 204


def test_bad_credential_bodies_are_400s_naming_the_field(api, alice):
    url = "/api/orgs/acme/credentials/"
    cases = [
        ({"provider": "a/b"}, "provider"),
        ({"provider": "x", "api_base": "ftp://h"}, "api_base"),
        ({"provider": "x", "models": "gpt"}, "models"),
        ({"provider": "x", "scope": "team"}, "scope"),
    ]
    for body, field in cases:
        response = api(alice).post(url, body, format="json")
        assert response.status_code == 400 and field in response.json()["error"]["fields"], (
            body,
            response.content,
        )
