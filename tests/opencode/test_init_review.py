"""`/init` and `/review`, the commands every project has (hangar.engine.agents.builtin_commands): listed by
GET /command in OpenCode's shape; POST /session/{id}/init runs `init` with the given model, in a real worker
with the Docker sandbox and the scripted model, and the model writes AGENTS.md; `review` becomes a task for
the general subagent; a workspace command of the same name replaces a built-in; a viewer is a 403 and
another org's session a 404."""

import pytest

from hangar.accounts.models import Membership, Role
from hangar.conversations.models import Message, Part
from hangar.engine.command_services import session_command
from hangar.engine.workspace.sandboxes import manager, sandbox_for
from tests.engine.conftest import wait_idle
from tests.opencode.conftest import assert_response, base_url
from tests.opencode.live import call

pytestmark = pytest.mark.django_db(transaction=True)


def init_body(session, message_id="msg_0000000000001aaaaaaaaaaaaa"):
    return {"providerID": "scripted", "modelID": session.model["modelID"], "messageID": message_id}


def test_init_and_review_are_listed_as_opencodes_built_ins(oc, alice):
    response = oc(alice).get(f"{base_url(alice)}/command")
    assert_response(response, "/command")
    listed = {c["name"]: c for c in response.json()}
    assert listed["init"]["description"] == "guided AGENTS.md setup"
    assert "AGENTS.md" in listed["init"]["template"] and "/workspace/AGENTS.md" in listed["init"]["template"]
    assert listed["review"]["subtask"] is True and listed["review"]["hints"] == ["$ARGUMENTS"]
    assert "git diff" in listed["review"]["template"]


def test_init_runs_its_prompt_and_the_model_writes_agents_md(oc, alice, script, make_session, worker):
    turns = script.load(
        [
            [call("write", "c1", filePath="/workspace/AGENTS.md", content="# Agents\n\nRun `make test`.\n")],
            [{"text": "Wrote AGENTS.md."}],
        ]
    )
    session = make_session(alice, turns)
    response = oc(alice).post(
        f"{base_url(alice)}/session/{session.pk}/init", init_body(session), format="json"
    )
    assert_response(response, "/session/{sessionID}/init", "post")
    assert response.json() is True
    wait_idle(session)
    first = script.requests(turns)[0]
    sent = " ".join(str(m["content"]) for m in first["messages"] if m["role"] == "user")
    assert "Write or update the file AGENTS.md at the root of the workspace (/workspace/AGENTS.md)" in sent
    user = Message.objects.get(pk="msg_0000000000001aaaaaaaaaaaaa")  # the client's message id is kept
    assert user.data["model"] == {"providerID": "scripted", "modelID": turns}
    assert "Run `make test`." in manager().connect(session.pk).read("/workspace/AGENTS.md").content


def test_review_is_a_task_for_the_general_subagent_and_a_workspace_command_replaces_it(
    oc, alice, script, make_session
):
    session = make_session(alice, script.load([]))
    session_command(actor=alice.actor, session=session, command="review", arguments="HEAD~1")
    (part,) = Part.objects.filter(session=session, type="subtask")
    assert part.data["agent"] == "general" and part.data["command"] == "review"
    assert 'from the argument "HEAD~1"' in part.data["prompt"]
    sandbox_for(session).write("/workspace/.opencode/commands/review.md", "Our own review of $ARGUMENTS\n")
    Part.objects.filter(session=session).delete()
    Message.objects.filter(session=session).delete()
    session_command(actor=alice.actor, session=session, command="review", arguments="main")
    (text,) = Part.objects.filter(session=session, type="text")
    assert text.data["text"] == "Our own review of main"


def test_init_refuses_a_viewer_another_org_and_a_bad_body(oc, alice, bob, charlie, script, make_session):
    session = make_session(alice, script.load([]))
    url = f"{base_url(alice)}/session/{session.pk}/init"
    assert oc(charlie).post(url, init_body(session), format="json").status_code == 404
    Membership.objects.filter(user=bob.user, org=alice.org).update(role=Role.VIEWER)
    assert oc(bob).post(url, init_body(session), format="json").status_code == 403
    response = oc(alice).post(url, {"providerID": "scripted"}, format="json")
    assert response.status_code == 400 and "modelID" in str(response.json())
    assert not Message.objects.filter(session=session).exists()
