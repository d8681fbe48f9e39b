"""MCP configuration over the API: the org's allow-list (members read, admins replace, other orgs 404) and a
project's servers in OpenCode's shape, each a 400 naming the field when bad or not allowed by the org."""

from hangar.audit.models import AuditEvent

POLICY = "/api/orgs/{org}/mcp-policy"
PROJECT = "/api/orgs/acme/projects/{id}/"
ALLOW = {"local": ["mcp-server-time*"], "remote": ["https://tools.example.com/*"]}
REMOTE = {
    "type": "remote",
    "url": "https://tools.example.com/mcp",
    "headers": {"Authorization": "Bearer {env:TOOLS_TOKEN}"},
}


def allow(alice, api):
    response = api(alice).put(POLICY.format(org="acme"), {"policy": ALLOW}, format="json")
    assert response.status_code == 200, response.content


def test_alice_sets_the_allow_list_and_bob_reads_it(alice, bob, api):
    allow(alice, api)
    assert api(bob).get(POLICY.format(org="acme")).json() == {"policy": ALLOW}
    assert api(bob).put(POLICY.format(org="acme"), {"policy": {}}, format="json").status_code == 403
    event = AuditEvent.objects.get(action="org.mcp_policy.set")
    assert event.org_id == alice.org.pk and event.data["to"] == ALLOW


def test_the_allow_list_rejects_other_org(alice, charlie, api):
    assert api(charlie).get(POLICY.format(org="acme")).status_code == 404
    assert api(charlie).put(POLICY.format(org="acme"), {"policy": ALLOW}, format="json").status_code == 404


def test_a_bad_allow_list_is_a_400_naming_the_field(alice, api):
    response = api(alice).put(POLICY.format(org="acme"), {"policy": {"remote": [3]}}, format="json")
    assert response.status_code == 400
    assert "policy.remote[0]" in response.json()["error"]["fields"]


def test_a_project_gets_an_allowed_remote_server(alice, api):
    allow(alice, api)
    response = api(alice).patch(
        PROJECT.format(id=alice.project.pk), {"mcp": {"tools": REMOTE}}, format="json"
    )
    assert response.status_code == 200, response.content
    assert response.json()["mcp"] == {"tools": REMOTE}
    alice.project.refresh_from_db()
    assert alice.project.mcp == {"tools": REMOTE}


def test_a_server_the_org_does_not_allow_is_a_400_naming_its_url(alice, api):
    allow(alice, api)
    elsewhere = {**REMOTE, "url": "https://evil.example.net/mcp"}
    response = api(alice).patch(PROJECT.format(id=alice.project.pk), {"mcp": {"x": elsewhere}}, format="json")
    assert response.status_code == 400
    assert "mcp.x.url" in response.json()["error"]["fields"]
    local = {"type": "local", "command": ["bash", "-c", "curl evil"]}
    response = api(alice).patch(PROJECT.format(id=alice.project.pk), {"mcp": {"sh": local}}, format="json")
    assert "mcp.sh.command" in response.json()["error"]["fields"]


def test_bad_server_config_is_a_400_naming_the_field(alice, api):
    allow(alice, api)
    cases = {
        "mcp.t.type": {"t": {"type": "ftp"}},
        "mcp.t.command": {"t": {"type": "local", "command": []}},
        "mcp.t.url": {"t": {"type": "remote", "url": "ftp://tools.example.com/"}},
        "mcp.t.headers": {"t": {**REMOTE, "headers": {"bad header": "x"}}},
        "mcp.t.timeout": {"t": {**REMOTE, "timeout": 0}},
        "mcp.t.cwd": {"t": {**REMOTE, "cwd": "/"}},  # not a field of a remote server
        "mcp.bad name": {"bad name": REMOTE},
    }
    for field, mcp in cases.items():
        response = api(alice).patch(PROJECT.format(id=alice.project.pk), {"mcp": mcp}, format="json")
        assert response.status_code == 400, field
        assert field in response.json()["error"]["fields"], (field, response.json())


def test_bob_cannot_set_a_projects_servers(alice, bob, api):
    allow(alice, api)
    response = api(bob).patch(PROJECT.format(id=alice.project.pk), {"mcp": {"tools": REMOTE}}, format="json")
    assert response.status_code == 403
