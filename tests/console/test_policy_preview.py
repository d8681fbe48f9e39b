"""The permission preview names the rule that decides (org deny, project rule, agent rule, built-in
default) and agrees with the loop; policy and project-rule writes name the bad item; scoping as
everywhere: members read, auditors do not, another org's project is a 404."""

import pytest

from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin import AGENTS

pytestmark = pytest.mark.django_db

PREVIEW = "/api/orgs/{org}/permission-preview"


def ask(api, persona, org="acme", **body):
    return api(persona).post(PREVIEW.format(org=org), body, format="json")


def set_rules(api, alice, org_rules, project_rules):
    assert (
        api(alice).put("/api/orgs/acme/permission-policy", {"rules": org_rules}, format="json").status_code
        == 200
    )
    response = api(alice).patch(
        f"/api/orgs/acme/projects/{alice.project.pk}/", {"permission_rules": project_rules}, format="json"
    )
    assert response.status_code == 200, response.json()


def test_each_layer_decides_and_says_why(api, alice, bob):
    set_rules(
        api,
        alice,
        [
            {"permission": "bash", "pattern": "rm *", "action": "deny"},
            {"permission": "bash", "pattern": "*", "action": "allow"},
        ],
        [
            {"permission": "bash", "pattern": "git push*", "action": "ask"},
            {"permission": "bash", "pattern": "rm -rf /tmp/x", "action": "allow"},
        ],
    )
    project = alice.project.pk
    org_deny = ask(api, bob, tool="bash", pattern="rm -rf /tmp/x", project=project).json()
    assert org_deny["action"] == "deny" and org_deny["decided_by"] == {
        "layer": "org",
        "index": 0,
        "rule": {"permission": "bash", "pattern": "rm *", "action": "deny"},
    }
    assert "org policy deny" in org_deny["why"]
    # the project's allow matched too, but could not undo the org's deny
    assert {"layer": "project", "index": 1} in [
        {k: m[k] for k in ("layer", "index")} for m in org_deny["matched"]
    ]
    # the org's allow is not a decision: only its denies apply on their own
    assert any(m["layer"] == "org" and m["index"] == 1 and m["applies"] is False for m in org_deny["matched"])

    project_ask = ask(api, bob, tool="bash", pattern="git push origin main", project=project).json()
    assert project_ask["action"] == "ask" and project_ask["decided_by"]["layer"] == "project"

    plan_edit = ask(api, bob, agent="plan", tool="write", pattern="src/app.py", project=project).json()
    assert plan_edit["permission"] == "edit" and plan_edit["action"] == "deny"
    assert plan_edit["decided_by"]["layer"] == "agent"

    env_read = ask(api, bob, tool="read", pattern="config/.env").json()
    assert env_read["action"] == "ask" and env_read["decided_by"]["layer"] == "default"


@pytest.mark.parametrize(
    ("agent", "permission", "pattern"),
    [
        ("build", "bash", "ls"),
        ("plan", "edit", ".opencode/plans/a.md"),
        ("explore", "bash", "x"),
        ("build", "read", "a.env.example"),
    ],
)
def test_the_preview_agrees_with_the_loop(api, alice, agent, permission, pattern):
    org_rules = [{"permission": "read", "pattern": "secret/*", "action": "deny"}]
    project_rules = [{"permission": "bash", "pattern": "l*", "action": "ask"}]
    set_rules(api, alice, org_rules, project_rules)
    answer = ask(
        api, alice, agent=agent, permission=permission, pattern=pattern, project=alice.project.pk
    ).json()
    ruleset = perm.DEFAULTS + AGENTS[agent].permission + project_rules
    assert answer["action"] == perm.decide(permission, [pattern], ruleset=ruleset, org_policy=org_rules)


def test_bad_input_names_the_field(api, alice):
    assert "agent" in ask(api, alice, agent="nope", tool="bash").json()["error"]["fields"]
    assert "tool" in ask(api, alice, pattern="x").json()["error"]["fields"]


def test_policy_and_project_rule_writes_name_the_bad_item(api, alice):
    bad = [
        {"permission": "bash", "pattern": "*", "action": "allow"},
        {"permission": "bash", "pattern": "*", "action": "maybe"},
    ]
    policy = api(alice).put("/api/orgs/acme/permission-policy", {"rules": bad}, format="json")
    assert policy.status_code == 400 and "rules[1].action" in policy.json()["error"]["fields"]
    project = api(alice).patch(
        f"/api/orgs/acme/projects/{alice.project.pk}/", {"permission_rules": bad}, format="json"
    )
    assert project.status_code == 400 and "permission_rules[1].action" in project.json()["error"]["fields"]


def test_auditors_are_refused_and_other_orgs_projects_are_not_found(api, alice, erin, charlie):
    assert ask(api, erin, tool="bash").status_code == 403
    assert ask(api, charlie, tool="bash").status_code == 404
    assert ask(api, charlie, org="globex", tool="bash", project=alice.project.pk).status_code == 404
