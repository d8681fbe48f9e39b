"""Every layer of the merge reaches a real run (worker, Docker sandbox, scripted model over HTTP): an org
`ask` cannot be loosened by a project `allow`, an org `allow` is honoured and narrowed by a member's own
rules, which apply to the runs that member prompts and to no one else's; the member's rules are set over
the API, bounded, and another org's are out of reach."""

import pytest

from hangar.accounts.org_policy_services import org_permission_policy_set
from hangar.accounts.services import member_permission_rules_set
from hangar.conversations.models import PermissionRequest
from hangar.engine.services import session_prompt
from hangar.projects.models import Project
from tests.engine.conftest import text_prompt, tool_parts, wait_for, wait_idle
from tests.engine.test_permissions_flow import bash

pytestmark = pytest.mark.django_db(transaction=True)

BASH = "bash"


def rules(action, pattern="*"):
    return [{"permission": BASH, "pattern": pattern, "action": action}]


def test_an_org_ask_is_not_loosened_by_a_project_allow(alice, script, make_session, worker):
    Project.objects.filter(pk=alice.project.pk).update(permission_rules=rules("allow"))
    org_permission_policy_set(actor=alice.actor, org=alice.org, rules=rules("ask", "git push*"))
    script_id = script.load([[bash("c1", "git push origin main")], [{"text": "done"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("push"))
    request = wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(),
        what="the org's ask",
    )
    assert request.permission == BASH and request.patterns == ["git push origin main"]


def test_an_org_allow_is_honoured_where_the_defaults_would_ask(alice, script, make_session, worker):
    # The defaults ask before reading `*.env`; the org allows it, so the run reads without asking.
    org_permission_policy_set(
        actor=alice.actor,
        org=alice.org,
        rules=[{"permission": "read", "pattern": "*.env", "action": "allow"}],
    )
    read = {"tool_calls": [{"name": "read", "id": "c2", "arguments": {"filePath": "/workspace/app.env"}}]}
    script_id = script.load([[bash("c1", "echo TOKEN_NAME=x > app.env")], [read], [{"text": "ok"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("read it"))
    _wrote, got = tool_parts(wait_idle(session))
    assert got["state"]["status"] == "completed" and "TOKEN_NAME" in got["state"]["output"]
    assert not PermissionRequest.objects.filter(session=session).exists()


def test_a_members_deny_applies_to_the_runs_they_prompt_and_not_to_a_colleagues(
    alice, bob, script, make_session, worker
):
    org_permission_policy_set(actor=alice.actor, org=alice.org, rules=rules("allow"))
    member_permission_rules_set(actor=bob.actor, org=bob.org, rules=rules("deny", "echo secret*"))
    steps = [[bash("c1", "echo secret-plan")], [{"text": "ok"}]]

    bobs = make_session(alice, script.load(steps))
    session_prompt(actor=bob.actor, session=bobs, parts=text_prompt("echo"))
    (denied,) = tool_parts(wait_idle(bobs))
    assert denied["state"]["status"] == "error" and "prevents you" in denied["state"]["error"]

    alices = make_session(alice, script.load(steps))
    session_prompt(actor=alice.actor, session=alices, parts=text_prompt("echo"))
    (ran,) = tool_parts(wait_idle(alices))
    assert ran["state"]["status"] == "completed" and "secret-plan" in ran["state"]["output"]
