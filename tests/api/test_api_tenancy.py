"""Every org-scoped route: a foreign org's objects are a 404 (never a 403), a token bound to one org is
a 404 on another org's URLs even when its user belongs to both, and anonymous callers get a 401."""

import pytest

from hangar.accounts.models import Membership, Role
from hangar.projects import crypto
from hangar.projects.models import ProjectEnvVar, ProviderCredential


@pytest.fixture
def acme_objects(alice, bob):
    ProjectEnvVar.objects.create(project=alice.project, name="API_URL", value_encrypted=crypto.encrypt("x"))
    credential = ProviderCredential.objects.create(org=alice.org, provider="openai")
    return {
        "project": alice.project.pk,
        "member": bob.membership.pk,
        "token": bob.token_row.pk,
        "credential": credential.pk,
    }


def routes(o):
    org = "/api/orgs/acme/"
    project = f"{org}projects/{o['project']}/"
    return [
        ("get", org, None),
        ("get", f"{org}members/", None),
        ("post", f"{org}members/", {"email": "x@y.test"}),
        ("get", f"{org}members/{o['member']}", None),
        ("patch", f"{org}members/{o['member']}", {"role": "viewer"}),
        ("delete", f"{org}members/{o['member']}", None),
        ("get", f"{org}tokens/", None),
        ("post", f"{org}tokens/", {"name": "t"}),
        ("delete", f"{org}tokens/{o['token']}", None),
        ("get", f"{org}projects/", None),
        ("post", f"{org}projects/", {"name": "evil"}),
        ("get", project, None),
        ("patch", project, {"name": "evil"}),
        ("delete", project, None),
        ("get", f"{project}env/", None),
        ("get", f"{project}env/API_URL", None),
        ("put", f"{project}env/API_URL", {"value": "evil"}),
        ("delete", f"{project}env/API_URL", None),
        ("get", f"{org}credentials/", None),
        ("post", f"{org}credentials/", {"provider": "openai", "api_key": "sk-evil"}),
        ("get", f"{org}credentials/{o['credential']}", None),
        ("patch", f"{org}credentials/{o['credential']}", {"api_key": "sk-evil"}),
        ("delete", f"{org}credentials/{o['credential']}", None),
    ]


ROUTE_IDS = [
    f"{m}-{i}" for i, (m, _, _) in enumerate(routes({"project": 0, "member": 0, "token": 0, "credential": 0}))
]


@pytest.mark.parametrize("index", range(len(ROUTE_IDS)), ids=ROUTE_IDS)
def test_charlie_gets_404_on_every_acme_route(api, charlie, acme_objects, index):
    method, url, body = routes(acme_objects)[index]
    response = getattr(api(charlie), method)(url, body, format="json")
    assert response.status_code == 404, (url, response.content)
    assert response.json() == {"error": {"code": "not_found", "message": "Not found."}}


@pytest.mark.parametrize("index", range(len(ROUTE_IDS)), ids=ROUTE_IDS)
def test_a_globex_token_is_404_on_acme_urls_even_for_a_member_of_both(
    api, acme, charlie, acme_objects, index
):
    Membership.objects.create(org=acme, user=charlie.user, role=Role.OWNER)
    method, url, body = routes(acme_objects)[index]
    response = getattr(api(charlie), method)(url, body, format="json")
    assert response.status_code == 404, (url, response.content)


@pytest.mark.parametrize("index", range(len(ROUTE_IDS)), ids=ROUTE_IDS)
def test_anonymous_gets_401_on_every_org_route(api, acme_objects, index):
    method, url, body = routes(acme_objects)[index]
    response = getattr(api(), method)(url, body, format="json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_a_missing_org_is_the_same_404_as_a_foreign_one(api, alice, charlie):
    missing = api(alice).get("/api/orgs/no-such-org/projects/")
    foreign = api(alice).get("/api/orgs/globex/projects/")
    assert missing.status_code == foreign.status_code == 404
    assert missing.json() == foreign.json()


def test_a_foreign_project_id_under_my_own_org_is_404(api, alice, charlie):
    response = api(alice).get(f"/api/orgs/acme/projects/{charlie.project.pk}/")
    assert response.status_code == 404


def test_a_browser_session_uses_the_org_in_the_url(alice, charlie):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(alice.user)
    assert client.get("/api/orgs/acme/projects/").status_code == 200
    assert client.get("/api/orgs/globex/projects/").status_code == 404


def test_a_browser_session_of_a_non_member_gets_the_same_404_as_for_a_missing_org(alice, charlie):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(charlie.user)
    foreign = client.get("/api/orgs/acme/projects/")
    missing = client.get("/api/orgs/no-such-org/projects/")
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json() == missing.json()


def test_a_browser_session_of_a_user_who_left_the_org_is_404(alice, bob):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(bob.user)
    assert client.get("/api/orgs/acme/projects/").status_code == 200
    Membership.objects.filter(user=bob.user).delete()
    assert client.get("/api/orgs/acme/projects/").status_code == 404


def test_a_token_request_reads_its_org_and_membership_with_the_token(api, alice, django_assert_num_queries):
    api(alice).get("/api/orgs/acme/projects/")  # stamps last_used_at (at most once a minute)
    with django_assert_num_queries(2):  # the token (with org and membership), the project list
        assert api(alice).get("/api/orgs/acme/projects/").status_code == 200
