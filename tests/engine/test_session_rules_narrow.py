"""Session permission rules (any member sets them) may only narrow the project's (an admin's): a session
`allow` cannot skip the project's ask or undo its deny, while a session deny still narrows. File tools
ask `external_directory` for paths outside the workspace (tools/test_tool_external_directory.py)."""

import pytest

from hangar.conversations.models import PermissionRequest, Session
from hangar.engine.agents import permissions as perm
from hangar.engine.services import session_prompt
from hangar.projects.models import Project
from tests.engine.conftest import text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.test_permissions_flow import bash


def _rules(project, rules):
    Project.objects.filter(pk=project.pk).update(permission_rules=rules)


@pytest.mark.django_db(transaction=True)
def test_a_session_allow_does_not_skip_the_projects_ask(alice, script, make_session, worker):
    _rules(alice.project, [{"permission": "bash", "pattern": "*", "action": "ask"}])
    session = make_session(alice, script.load([[bash("c1", "echo loosened")], [{"text": "done"}]]))
    Session.objects.filter(pk=session.pk).update(
        permission=[{"permission": "bash", "pattern": "*", "action": "allow"}]
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run it"))
    request = wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(),
        timeout=60,
        what="the project's ask",
    )
    assert request.permission == "bash"


@pytest.mark.django_db(transaction=True)
def test_a_session_allow_does_not_undo_the_projects_deny_and_a_session_deny_narrows(
    alice, script, make_session, worker
):
    _rules(alice.project, [{"permission": "bash", "pattern": "rm *", "action": "deny"}])
    script_id = script.load(
        [[bash("c1", "rm -rf /workspace/x")], [bash("c2", "ls /workspace")], [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    Session.objects.filter(pk=session.pk).update(
        permission=[
            {"permission": "bash", "pattern": "*", "action": "allow"},
            {"permission": "bash", "pattern": "ls *", "action": "deny"},
        ]
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("clean up"))
    session = wait_idle(session, timeout=120)
    states = [p["state"] for p in tool_parts(session)]
    assert [s["status"] for s in states] == ["error", "error"], states
    assert all("prevents you from using this specific tool call" in s["error"] for s in states)


def test_rule_layers_session_only_narrows_defaults_and_project():
    project = [
        {"permission": "bash", "pattern": "*", "action": "ask"},
        {"permission": "bash", "pattern": "git *", "action": "allow"},
    ]
    session = perm.narrowing([{"permission": "bash", "pattern": "*", "action": "allow"}])
    ruleset = perm.DEFAULTS + project + session
    assert perm.evaluate("bash", "npm install", ruleset) == perm.ASK
    assert perm.evaluate("bash", "git status", ruleset) == perm.ALLOW
    assert perm.evaluate("edit", "a.py", ruleset) == perm.ALLOW
    narrowed = ruleset + perm.narrowing([{"permission": "bash", "pattern": "git push*", "action": "deny"}])
    assert perm.evaluate("bash", "git push origin", narrowed) == perm.DENY
    # the tool stays offered (only some calls are denied); a project-wide deny is not undone by a session
    denied = [*perm.DEFAULTS, {"permission": "bash", "pattern": "*", "action": "deny"}, *session]
    assert perm.disabled_tools(["bash"], denied, []) == {"bash"}
