"""`!` shell mode (OpenCode's POST /session/{id}/shell) against the real Docker sandbox: the command runs in
the session's workspace and is recorded as OpenCode records it (a user message with its synthetic note, an
assistant message holding one completed bash part), answered in OpenCode's shape; the next prompt's model
reads it as a bash call and its result. A command the bash rules deny is a 403 and runs nothing; a busy
session is a 409; a viewer is a 403; another org's session is a 404."""

import pytest

from hangar.accounts.models import Membership, Role
from hangar.audit.models import AuditEvent
from hangar.conversations.models import Message, Part, Session
from hangar.engine.services import session_prompt
from hangar.engine.workspace.sandboxes import manager
from tests.engine.conftest import text_prompt, wait_idle
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db(transaction=True)

PATH = "/session/{sessionID}/shell"


def shell(client, persona, session, command, **extra):
    url = f"{base_url(persona)}/session/{session.pk}/shell"
    return client(persona).post(url, {"agent": "build", "command": command, **extra}, format="json")


def test_a_shell_command_runs_in_the_sandbox_and_is_recorded_as_opencode_does(
    oc, alice, script, make_session, worker
):
    session = make_session(alice, script.load([[{"text": "I saw the listing."}]]))
    response = shell(oc, alice, session, "echo hello > hi.txt && ls")
    assert response.status_code == 200, response.content
    assert_response(response, PATH, "post")
    body = response.json()
    assert body["info"]["role"] == "assistant" and body["info"]["agent"] == "build"
    assert body["info"]["time"]["completed"] >= body["info"]["time"]["created"]
    (part,) = body["parts"]
    assert part["tool"] == "bash" and part["state"]["status"] == "completed"
    assert part["state"]["input"] == {"command": "echo hello > hi.txt && ls"}
    assert part["state"]["output"].strip() == "hi.txt"
    assert manager().connect(session.pk).read("/workspace/hi.txt").content.strip() == "hello"
    user = Message.objects.get(pk=body["info"]["parentID"])
    (note,) = Part.objects.filter(message=user)
    assert note.data["text"] == "The following tool was executed by the user" and note.data["synthetic"]
    assert Session.objects.get(pk=session.pk).status == "idle"
    assert AuditEvent.objects.filter(action="session.shell", target_id=session.pk).count() == 1
    # The next prompt's model reads the command as a bash call of its own history, with its output.
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("what did I list?"))
    wait_idle(session)
    (request,) = script.requests(session.model["modelID"])
    messages = request["messages"]
    calls = [m for m in messages if m.get("tool_calls")]
    assert calls[0]["tool_calls"][0]["function"]["name"] == "bash"
    assert any(m["role"] == "tool" and "hi.txt" in m["content"] for m in messages)


def test_a_denied_command_runs_nothing_and_a_viewer_or_busy_session_is_refused(
    oc, alice, bob, script, make_session
):
    session = make_session(alice, script.load([]))
    alice.project.permission_rules = [{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    alice.project.save(update_fields=["permission_rules"])
    response = shell(oc, alice, session, "ls; rm -rf src")
    assert response.status_code == 403 and "deny" in str(response.json()), response.content
    assert not Message.objects.filter(session=session).exists()
    Membership.objects.filter(user=bob.user, org=alice.org).update(role=Role.VIEWER)
    assert shell(oc, bob, session, "ls").status_code == 403
    Session.objects.filter(pk=session.pk).update(status="busy")
    response = shell(oc, alice, session, "ls")
    assert response.status_code == 409 and response.json()["_tag"] == "SessionBusyError"
    assert shell(oc, alice, session, "").status_code == 400
    assert not Message.objects.filter(session=session).exists()


def test_another_orgs_session_is_a_404(oc, alice, charlie, script, make_session):
    session = make_session(alice, script.load([]))
    url = f"{base_url(alice)}/session/{session.pk}/shell"
    response = oc(charlie).post(url, {"agent": "build", "command": "ls"}, format="json")
    assert response.status_code == 404
    assert not Message.objects.filter(session=session).exists()


def test_a_shell_command_gets_only_its_scoped_secret_and_its_output_is_masked(
    oc, alice, script, make_session
):
    from hangar.projects.env_var_services import env_var_set

    value = "shell-secret-Qm4nB7vX2"
    scope = {"commands": ["printenv SHELL_TOKEN"]}
    env_var_set(actor=alice.actor, project=alice.project, name="SHELL_TOKEN", value=value, scope=scope)
    session = make_session(alice, script.load([]))
    scoped = shell(oc, alice, session, "printenv SHELL_TOKEN")
    assert scoped.status_code == 200, scoped.content
    assert scoped.json()["parts"][0]["state"]["output"].strip() == "***"
    other = shell(oc, alice, session, "echo [$SHELL_TOKEN]").json()["parts"][0]["state"]["output"]
    assert other.strip() == "[]"
    stored = [p.data for p in Part.objects.filter(session=session)]
    assert value not in str(stored)
