"""A secret env var's scope over the API: which processes get it (setup script, bash command patterns, MCP
servers). Admins set it, members read it, other orgs see nothing; a bad scope is a 400 naming its field."""

from hangar.audit.models import AuditEvent
from hangar.projects.env import secrets_for_mcp, secrets_for_setup
from hangar.projects.models import Project

TOKEN = "npm_tok-ABCDEF123456"


def env_url(persona, name=""):
    return f"/api/orgs/acme/projects/{persona.project.pk}/env/{name}"


def test_alice_scopes_a_secret_and_bob_sees_the_scope_but_not_the_value(api, alice, bob):
    scope = {"setup": True, "commands": ["npm publish *", "npm publish"], "mcp": ["github"]}
    put = api(alice).put(env_url(alice, "NPM_TOKEN"), {"value": TOKEN, "scope": scope}, format="json")
    assert put.status_code == 200
    assert put.json() == {"name": "NPM_TOKEN", "secret": True, "value": None, "scope": scope}
    assert api(bob).get(env_url(alice, "NPM_TOKEN")).json()["scope"] == scope
    project = Project.objects.get(pk=alice.project.pk)
    assert secrets_for_setup(project) == {"NPM_TOKEN": TOKEN}
    assert secrets_for_mcp(project, "github") == {"NPM_TOKEN": TOKEN}
    assert secrets_for_mcp(project, "slack") == {}


def test_the_scope_changes_without_sending_the_value_again_and_is_audited(api, alice):
    api(alice).put(env_url(alice, "NPM_TOKEN"), {"value": TOKEN}, format="json")
    changed = api(alice).put(
        env_url(alice, "NPM_TOKEN") + "/scope", {"scope": {"commands": ["npm publish *"]}}, format="json"
    )
    assert changed.status_code == 200
    assert changed.json()["scope"] == {"setup": False, "commands": ["npm publish *"], "mcp": []}
    # Setting the value again keeps the scope.
    api(alice).put(env_url(alice, "NPM_TOKEN"), {"value": TOKEN + "-2"}, format="json")
    assert api(alice).get(env_url(alice, "NPM_TOKEN")).json()["scope"]["commands"] == ["npm publish *"]
    event = AuditEvent.objects.filter(action="project.env_scope_set").get()
    assert event.data["scope"]["commands"] == ["npm publish *"] and TOKEN not in str(event.data)


def test_bob_cannot_change_a_scope_and_charlie_gets_a_404(api, alice, bob, charlie):
    api(alice).put(env_url(alice, "NPM_TOKEN"), {"value": TOKEN}, format="json")
    body = {"scope": {"setup": True}}
    assert api(bob).put(env_url(alice, "NPM_TOKEN") + "/scope", body, format="json").status_code == 403
    foreign = f"/api/orgs/acme/projects/{alice.project.pk}/env/NPM_TOKEN/scope"
    assert api(charlie).put(foreign, body, format="json").status_code == 404
    other = f"/api/orgs/{charlie.org.slug}/projects/{alice.project.pk}/env/NPM_TOKEN/scope"
    assert api(charlie).put(other, body, format="json").status_code == 404
    assert api(alice).get(env_url(alice, "NPM_TOKEN")).json()["scope"]["setup"] is False


def _fields(response):
    assert response.status_code == 400, response.content
    return list(response.json()["error"]["fields"])


def test_bad_scopes_are_400s_naming_the_field(api, alice):
    api(alice).put(env_url(alice, "NPM_TOKEN"), {"value": TOKEN}, format="json")
    url = env_url(alice, "NPM_TOKEN") + "/scope"
    cases = [
        ({"scope": "all"}, "scope"),
        ({"scope": {"setup": "yes"}}, "scope.setup"),
        ({"scope": {"everywhere": True}}, "scope.everywhere"),
        ({"scope": {"commands": "npm *"}}, "scope.commands"),
        ({"scope": {"commands": ["npm *", "x" * 201]}}, "scope.commands[1]"),
        ({"scope": {"commands": ["*"]}}, "scope.commands"),
        ({"scope": {"commands": ["a\nb"]}}, "scope.commands[0]"),
        ({"scope": {"commands": [f"c{i} *" for i in range(21)]}}, "scope.commands"),
        ({"scope": {"mcp": ["bad name!"]}}, "scope.mcp[0]"),
    ]
    for body, field in cases:
        assert _fields(api(alice).put(url, body, format="json")) == [field], body
    assert api(alice).get(env_url(alice, "NPM_TOKEN")).json()["scope"]["commands"] == []


def test_a_short_secret_cannot_be_scoped_and_a_plain_var_has_no_scope(api, alice):
    short = api(alice).put(env_url(alice, "PIN"), {"value": "1234", "scope": {"setup": True}}, format="json")
    assert _fields(short) == ["scope"] and "masked" in short.json()["error"]["fields"]["scope"][0]
    assert api(alice).get(env_url(alice, "PIN")).status_code == 404  # nothing half-written
    plain = {"value": "debug-level", "secret": False, "scope": {"setup": True}}
    assert _fields(api(alice).put(env_url(alice, "LOG"), plain, format="json")) == ["scope"]
