"""A stored key goes only where its owner sent it: a new api_base needs the key in the same request, and
nobody but its owner edits a personal credential (an admin may still revoke it)."""

from hangar.projects import crypto
from hangar.projects.models import ProviderCredential

BASE_A, BASE_B = "https://1.1.1.1/v1", "https://8.8.8.8/v1"  # public literals: no DNS lookup


def _url(persona, credential_id=None):
    root = f"/api/orgs/{persona.org.slug}/credentials/"
    return root if credential_id is None else f"{root}{credential_id}"


def _create(api, persona, scope="org", key="sk-secret-1234"):
    response = api(persona).post(
        _url(persona),
        {"provider": "custom", "scope": scope, "api_key": key, "api_base": BASE_A},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()["id"]


def test_pointing_an_org_credential_elsewhere_without_its_key_is_refused(api, alice):
    credential_id = _create(api, alice)
    response = api(alice).patch(_url(alice, credential_id), {"api_base": BASE_B}, format="json")
    assert response.status_code == 400 and "api_key" in response.json()["error"]["fields"]
    response = api(alice).post(
        _url(alice), {"provider": "custom", "scope": "org", "api_base": BASE_B}, format="json"
    )
    assert response.status_code == 400 and "api_key" in response.json()["error"]["fields"]
    stored = ProviderCredential.objects.get(pk=credential_id)
    assert stored.api_base == BASE_A and crypto.decrypt(stored.api_key_encrypted) == "sk-secret-1234"


def test_a_new_api_base_with_the_key_in_the_same_request_is_accepted(api, alice):
    credential_id = _create(api, alice)
    response = api(alice).patch(
        _url(alice, credential_id), {"api_base": BASE_B, "api_key": "sk-new-5678"}, format="json"
    )
    assert response.status_code == 200, response.content
    stored = ProviderCredential.objects.get(pk=credential_id)
    assert stored.api_base == BASE_B and crypto.decrypt(stored.api_key_encrypted) == "sk-new-5678"
    # Models alone, base unchanged: the key stays without being sent again.
    response = api(alice).patch(_url(alice, credential_id), {"models": ["m1"]}, format="json")
    assert response.status_code == 200, response.content


def test_an_owner_cannot_edit_a_members_personal_credential_but_can_revoke_it(api, alice, bob):
    credential_id = _create(api, bob, scope="user", key="sk-bob-personal")
    for body in ({"api_base": BASE_B, "api_key": "sk-alice"}, {"api_base": BASE_B}, {"models": ["x"]}):
        response = api(alice).patch(_url(alice, credential_id), body, format="json")
        assert response.status_code in (403, 404), response.content
    stored = ProviderCredential.objects.get(pk=credential_id)
    assert stored.api_base == BASE_A and crypto.decrypt(stored.api_key_encrypted) == "sk-bob-personal"
    assert api(alice).delete(_url(alice, credential_id)).status_code == 204
    assert not ProviderCredential.objects.filter(pk=credential_id).exists()
