"""Settings writes from an OpenCode client: PATCH /config changes the project's model, default agent and
permission rules (OpenCode's shapes) for an admin, audited, and refuses a member with a 403 that says who
may, and any other key with a 400 naming it; GET/PATCH /global/config keeps each member's own settings
(a viewer's too), which GET /config shows under the project's; another org's token is a 404 on each."""

import pytest

from hangar.accounts.models import Membership, Role
from hangar.audit.models import AuditEvent
from hangar.projects.models import ProviderCredential
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def offered(alice):
    ProviderCredential.objects.create(org=alice.org, provider="scripted", models_list=["one", "two"])
    return alice


def test_an_admin_patches_the_projects_model_agent_and_rules(oc, offered):
    alice = offered
    body = {
        "model": "scripted/two",
        "default_agent": "plan",
        "permission": {"bash": {"git *": "allow", "rm *": "deny"}, "webfetch": "ask"},
    }
    response = oc(alice).patch(f"{base_url(alice)}/config", body, format="json")
    assert_response(response, "/config", "patch")
    assert response.json()["model"] == "scripted/two" and response.json()["default_agent"] == "plan"
    alice.project.refresh_from_db()
    assert alice.project.default_model == "scripted/two" and alice.project.default_agent == "plan"
    assert alice.project.permission_rules == [
        {"permission": "bash", "pattern": "git *", "action": "allow"},
        {"permission": "bash", "pattern": "rm *", "action": "deny"},
        {"permission": "webfetch", "pattern": "*", "action": "ask"},
    ]
    assert AuditEvent.objects.filter(action="project.update", target_id=str(alice.project.pk)).exists()


def test_a_member_gets_a_clear_403_and_a_foreign_key_or_model_a_400(oc, offered, bob):
    alice = offered
    response = oc(bob).patch(f"{base_url(bob)}/config", {"model": "scripted/two"}, format="json")
    assert response.status_code == 403
    assert "admins and owners" in response.json()["data"]["message"]
    response = oc(alice).patch(f"{base_url(alice)}/config", {"mcp": {}, "provider": {}}, format="json")
    assert response.status_code == 400 and set(response.json()["data"]["errors"]) == {"mcp", "provider"}
    response = oc(alice).patch(f"{base_url(alice)}/config", {"model": "globex/secret"}, format="json")
    assert response.status_code == 400 and "scripted/one" in str(response.json())
    response = oc(alice).patch(f"{base_url(alice)}/config", {"permission": {"bash": "maybe"}}, format="json")
    assert response.status_code == 400
    alice.project.refresh_from_db()
    assert alice.project.default_model == "" and alice.project.permission_rules == []


def test_each_member_keeps_their_own_global_config(oc, alice, bob):
    viewer_row = Membership.objects.get(user=bob.user, org=bob.org)
    viewer_row.role = Role.VIEWER
    viewer_row.save()
    url = f"{base_url(bob)}/global/config"
    response = oc(bob).patch(
        url, {"username": "Bobby", "small_model": "scripted/one", "layout": "stretch"}, format="json"
    )
    assert_response(response, "/global/config", "patch")
    assert response.json()["username"] == "Bobby"
    assert oc(bob).get(url).json()["layout"] == "stretch"
    assert "username" not in oc(alice).get(f"{base_url(alice)}/global/config").json()  # bob's alone
    assert oc(bob).get(f"{base_url(bob)}/config").json()["username"] == "Bobby"  # under the project's
    assert oc(alice).get(f"{base_url(alice)}/config").json()["username"] == alice.user.email
    response = oc(bob).patch(url, {"layout": None, "permission": "allow", "theme": "x"}, format="json")
    assert response.status_code == 400
    assert set(response.json()["data"]["errors"]) == {"permission", "theme"}
    assert "admins change it" in str(response.json()["data"]["errors"]["permission"])
    assert oc(bob).patch(url, {"layout": None}, format="json").json() == {
        "$schema": "https://opencode.ai/config.json",
        "username": "Bobby",
        "small_model": "scripted/one",
    }
    assert AuditEvent.objects.filter(action="member.config.set").count() == 2


def test_another_orgs_token_gets_nothing(oc, alice, charlie):
    for method, path in (
        ("get", "config"),
        ("patch", "config"),
        ("get", "global/config"),
        ("patch", "global/config"),
    ):
        response = getattr(oc(charlie), method)(f"{base_url(alice)}/{path}", {"username": "x"}, format="json")
        assert response.status_code == 404, (method, path)
    assert Membership.objects.get(user=alice.user).opencode_config == {}
