"""The read-only routes a client asks for on attach answer with OpenCode's shapes."""

import pytest

from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db

ROUTES = [
    "/config",
    "/agent",
    "/path",
    "/project/current",
    "/provider",
    "/config/providers",
    "/permission",
    # What the TUI asks at start: /lsp, /formatter and /mcp answer for the project's newest session.
    "/lsp",
    "/formatter",
    "/mcp",
    "/provider/auth",
    "/experimental/capabilities",
    "/experimental/console",
    "/experimental/workspace",
    "/experimental/workspace/status",
    "/experimental/resource",
    "/vcs",
    "/command",
    "/skill",
]


@pytest.fixture
def modelled(alice):
    alice.project.default_model = "scripted/five-step"
    alice.project.save()
    return alice


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_matches_opencodes_schema_for_a_member(oc, modelled, bob, route):
    assert_response(oc(bob).get(f"{base_url(modelled)}{route}"), route)


@pytest.mark.parametrize("route", ROUTES)
def test_each_route_is_not_found_for_another_org(oc, alice, charlie, route):
    assert oc(charlie).get(f"{base_url(alice)}{route}").status_code == 404


def test_config_names_the_projects_default_model(oc, modelled):
    assert oc(modelled).get(f"{base_url(modelled)}/config").json()["model"] == "scripted/five-step"


def test_providers_say_whether_the_model_takes_attachments(oc, modelled):
    def capabilities() -> dict:
        [provider] = oc(modelled).get(f"{base_url(modelled)}/config/providers").json()["providers"]
        return provider["models"]["five-step"]["capabilities"]

    assert capabilities()["attachment"] is False and capabilities()["input"]["image"] is False
    modelled.project.model_limits = {"scripted/five-step": {"context": 32000, "attachments": True}}
    modelled.project.save()
    assert capabilities()["attachment"] is True and capabilities()["input"]["pdf"] is True


def test_agents_include_build_and_plan(oc, alice):
    names = {agent["name"] for agent in oc(alice).get(f"{base_url(alice)}/agent").json()}
    assert {"build", "plan"} <= names


def test_the_project_has_one_directory_the_workspace(oc, alice, charlie):
    url = f"{base_url(alice)}/project/{alice.project.pk}/directories"
    response = oc(alice).get(url)
    assert_response(response, "/project/{projectID}/directories")
    assert response.json() == [{"directory": "/workspace"}]
    assert oc(alice).get(f"{base_url(alice)}/project/999999/directories").status_code == 404
    assert oc(charlie).get(url).status_code == 404


def test_vcs_names_the_default_branch(oc, alice):
    alice.project.repo_default_branch = "trunk"
    alice.project.save()
    response = oc(alice).get(f"{base_url(alice)}/vcs")
    assert_response(response, "/vcs")
    assert response.json() == {"default_branch": "trunk"}


def models_offered(client, persona, route: str) -> dict[str, list[str]]:
    body = client.get(f"{base_url(persona)}{route}").json()
    providers = body["providers"] if route == "/config/providers" else body["all"]
    return {p["id"]: sorted(p["models"]) for p in providers}


def test_providers_list_the_orgs_models_not_only_the_projects_default(oc, modelled, bob, charlie):
    from hangar.projects.models import ProviderCredential
    from hangar.usage.models import ModelAllowList

    org = modelled.org
    ProviderCredential.objects.create(org=org, provider="openai", models_list=["gpt-4o", "gpt-4o-mini"])
    ProviderCredential.objects.create(org=org, provider="scripted", models_list=["five-step", "other"])
    ProviderCredential.objects.create(org=org, user=bob.user, provider="mine", models_list=["bobs"])
    ProviderCredential.objects.create(org=charlie.org, provider="globex", models_list=["secret"])
    for route in ("/config/providers", "/provider"):
        assert_response(oc(modelled).get(f"{base_url(modelled)}{route}"), route)
        assert models_offered(oc(modelled), modelled, route) == {
            "scripted": ["five-step", "other"],
            "openai": ["gpt-4o", "gpt-4o-mini"],
        }
        # A member's own credential is offered to them alone.
        assert models_offered(oc(bob), modelled, route)["mine"] == ["bobs"]
    body = oc(modelled).get(f"{base_url(modelled)}/config/providers").json()
    assert body["default"]["scripted"] == "five-step"

    # The allow-list narrows the offer; a project without a default model still offers the org's models.
    ModelAllowList.objects.create(org=org, allowed=["openai/gpt-4o", "other"])
    modelled.project.default_model = ""
    modelled.project.save()
    assert models_offered(oc(modelled), modelled, "/config/providers") == {
        "openai": ["gpt-4o"],
        "scripted": ["other"],
    }
