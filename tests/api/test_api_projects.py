"""Projects: every member reads; admins create, update, delete; validation names the field."""

import pytest

from hangar.accounts.models import Membership, Role
from hangar.projects.models import Project


def test_every_acme_persona_lists_and_reads_the_project(api, alice, bob, dave):
    for persona in (alice, bob, dave):
        assert [p["slug"] for p in api(persona).get("/api/orgs/acme/projects/").json()] == ["rocket"]
        detail = api(persona).get(f"/api/orgs/acme/projects/{alice.project.pk}/").json()
        assert detail["opencode_url"].endswith(f"/oc/{alice.project.pk}")


def test_charlie_lists_only_globex_projects(api, alice, charlie):
    assert [p["slug"] for p in api(charlie).get("/api/orgs/globex/projects/").json()] == ["satellite"]


def test_alice_creates_a_project_with_rules_limits_and_allowlist(api, alice):
    body = {
        "name": "Web App",
        "default_model": "openai/gpt-4o",
        "setup_script": "pip install -e .",
        "permission_rules": [
            {"permission": "bash", "pattern": "git *", "action": "allow"},
            {"permission": "edit", "pattern": "*", "action": "ask"},
        ],
        "sandbox_cpus": 2,
        "sandbox_memory_mb": 2048,
        "network_policy": "allowlist",
        "network_allowlist": ["pypi.org", "*.github.com:443", "151.101.0.0/16"],
    }
    response = api(alice).post("/api/orgs/acme/projects/", body, format="json")
    assert response.status_code == 201, response.content
    project = Project.objects.get(pk=response.json()["id"])
    assert project.slug == "web-app" and project.org == alice.org
    assert project.permission_rules[1]["action"] == "ask"
    assert project.network_allowlist == ["pypi.org", "*.github.com:443", "151.101.0.0/16"]


def test_bob_and_dave_cannot_create_update_or_delete_projects(api, alice, bob, dave):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for persona in (bob, dave):
        assert api(persona).post("/api/orgs/acme/projects/", {"name": "x"}, format="json").status_code == 403
        assert api(persona).patch(url, {"name": "x"}, format="json").status_code == 403
        assert api(persona).delete(url).status_code == 403
    assert Project.objects.get(pk=alice.project.pk).name == "rocket"


def test_an_admin_updates_and_deletes_a_project(api, alice, bob):
    Membership.objects.filter(pk=bob.membership.pk).update(role=Role.ADMIN)
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    response = api(bob).patch(url, {"default_agent": "plan", "command_timeout_s": 120}, format="json")
    assert response.status_code == 200
    assert response.json()["default_agent"] == "plan" and response.json()["command_timeout_s"] == 120
    assert api(bob).delete(url).status_code == 204
    assert not Project.objects.filter(pk=alice.project.pk).exists()


def test_a_bad_rule_action_is_a_400_naming_the_rule(api, alice):
    rules = [
        {"permission": "bash", "pattern": "*", "action": "allow"},
        {"permission": "bash", "pattern": "rm *", "action": "maybe"},
    ]
    response = api(alice).post(
        "/api/orgs/acme/projects/", {"name": "x", "permission_rules": rules}, format="json"
    )
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["permission_rules[1].action"]


def test_rules_that_are_not_a_list_are_a_400(api, alice):
    response = api(alice).patch(
        f"/api/orgs/acme/projects/{alice.project.pk}/", {"permission_rules": {"bash": "allow"}}, format="json"
    )
    assert response.status_code == 400 and "permission_rules" in response.json()["error"]["fields"]


def test_limits_out_of_bounds_are_a_400_naming_the_limit(api, alice):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for field, value in [
        ("sandbox_cpus", 64),
        ("sandbox_memory_mb", 1),
        ("sandbox_pids", 0),
        ("sandbox_disk_mb", 10**7),
        ("command_timeout_s", 0),
    ]:
        response = api(alice).patch(url, {field: value}, format="json")
        assert response.status_code == 400 and list(response.json()["error"]["fields"]) == [field]


def test_a_bad_allowlist_entry_and_a_bad_policy_are_400s(api, alice):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    bad_host = api(alice).patch(url, {"network_allowlist": ["ok.example.com", "not a host!"]}, format="json")
    assert bad_host.status_code == 400 and "network_allowlist[1]" in bad_host.json()["error"]["fields"]
    bad_policy = api(alice).patch(url, {"network_policy": "open"}, format="json")
    assert bad_policy.status_code == 400 and "network_policy" in bad_policy.json()["error"]["fields"]


@pytest.mark.parametrize(
    "entry",
    [
        "169.254.169.254",
        "0.0.0.0/0:6379",
        "127.0.0.1:5432",
        "172.17.0.1",
        "10.0.0.0/8",
        "[fe80::1]:80",
        "::ffff:169.254.169.254",
    ],
)
def test_allowlist_entries_for_metadata_loopback_the_bridge_or_private_ranges_are_400s(api, alice, entry):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    response = api(alice).patch(url, {"network_allowlist": ["pypi.org", entry]}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == ["network_allowlist[1]"]
    assert Project.objects.get(pk=alice.project.pk).network_allowlist != ["pypi.org", entry]


def test_a_private_range_the_operator_opened_is_accepted_but_metadata_never_is(api, alice, settings):
    settings.HANGAR_EGRESS_ALLOW_PRIVATE = "10.0.0.0/8, 169.254.0.0/16"
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    assert (
        api(alice).patch(url, {"network_allowlist": ["10.1.0.0/16:5000"]}, format="json").status_code == 200
    )
    refused = api(alice).patch(url, {"network_allowlist": ["10.1.2.3", "169.254.169.254"]}, format="json")
    assert refused.status_code == 400 and list(refused.json()["error"]["fields"]) == ["network_allowlist[1]"]
    wider = api(alice).patch(url, {"network_allowlist": ["0.0.0.0/0"]}, format="json")
    assert wider.status_code == 400 and list(wider.json()["error"]["fields"]) == ["network_allowlist[0]"]


def test_a_wrongly_typed_field_is_a_400_naming_it(api, alice):
    response = api(alice).patch(
        f"/api/orgs/acme/projects/{alice.project.pk}/", {"sandbox_pids": "lots"}, format="json"
    )
    assert response.status_code == 400 and list(response.json()["error"]["fields"]) == ["sandbox_pids"]


def test_a_duplicate_slug_is_a_400_naming_slug(api, alice):
    response = api(alice).post(
        "/api/orgs/acme/projects/", {"name": "Rocket", "slug": "rocket"}, format="json"
    )
    assert response.status_code == 400 and "slug" in response.json()["error"]["fields"]


def test_the_same_slug_is_fine_in_another_org(api, alice, charlie):
    response = api(charlie).post("/api/orgs/globex/projects/", {"name": "rocket"}, format="json")
    assert response.status_code == 201
