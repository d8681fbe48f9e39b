"""`manage.py bootstrap --json`: idempotent org/user/project, a new token each run, one JSON object."""

import io
import json

from django.core.management import call_command

from hangar.accounts.models import ApiToken, Membership, Org, User
from hangar.projects.credentials import credential_resolve
from hangar.projects.models import Project


def bootstrap(*args) -> dict:
    out = io.StringIO()
    call_command("bootstrap", "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_running_twice_finds_the_same_things_and_issues_two_working_tokens(db, api, settings):
    settings.PUBLIC_URL = "http://hangar.test:8000"
    first = bootstrap("--email", "Ops@Example.test", "--org", "ops", "--project", "infra")
    second = bootstrap("--email", "ops@example.test", "--org", "ops", "--project", "infra")
    assert (
        Org.objects.filter(slug="ops").count(),
        User.objects.filter(email="ops@example.test").count(),
        Project.objects.filter(slug="infra").count(),
    ) == (1, 1, 1)
    project = Project.objects.get(slug="infra")
    assert (
        first["url"] == "http://hangar.test:8000"
        and first["opencode_url"] == f"http://hangar.test:8000/oc/{project.pk}"
    )
    assert (first["org"], first["project"], first["email"]) == ("ops", "infra", "ops@example.test")
    assert first["password"] and second["password"] is None
    assert first["token"] != second["token"] and ApiToken.objects.filter(org__slug="ops").count() == 2
    for result in (first, second):
        me = api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {result['token']}")
        assert me.status_code == 200 and me.json()["orgs"][0]["role"] == "owner"
    user = User.objects.get(email="ops@example.test")
    assert user.is_staff and user.check_password(first["password"])


def test_a_given_password_is_used_only_when_creating(db):
    bootstrap("--email", "a@b.test", "--password", "first-pass")
    bootstrap("--email", "a@b.test", "--password", "other-pass")
    assert User.objects.get(email="a@b.test").check_password("first-pass")


def test_api_base_and_model_store_a_local_credential_and_the_default_model(db):
    result = bootstrap(
        "--org",
        "llm",
        "--api-base",
        "http://127.0.0.1:8080/v1/",
        "--model",
        "gemma",
        "--api-key",
        "sk-local-key-123456",
    )
    assert result["default_model"] == "local/gemma"
    org = Org.objects.get(slug="llm")
    resolved = credential_resolve(org_id=org.pk, user_id=None, provider="local")
    assert (resolved.api_base, resolved.models, resolved.api_key) == (
        "http://127.0.0.1:8080/v1",
        ["gemma"],
        "sk-local-key-123456",
    )
    assert Project.objects.get(org=org).default_model == "local/gemma"


def test_an_existing_user_joins_an_existing_org_as_owner(alice):
    bootstrap("--email", "new-op@acme.test", "--org", "acme", "--project", "rocket")
    assert Membership.objects.get(org=alice.org, user__email="new-op@acme.test").role == "owner"
    assert Project.objects.filter(org=alice.org).count() == 1
