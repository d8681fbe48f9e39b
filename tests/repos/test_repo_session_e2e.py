"""A repository session end to end: a real Celery worker (its warm pool on) runs the prompt; before the
first tool call the workspace is the clone on the session's branch and the setup script has run; the
session's changes are measured against the cloned tree (the step's patch names only the edited file)."""

import pytest

from hangar.conversations.models import Event, Part
from hangar.engine.services import session_prompt
from hangar.repos.models import SessionWorkspace
from tests.engine.conftest import text_prompt, tool_parts, wait_idle

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def test_the_first_tool_call_sees_the_clone_and_the_setup_and_the_diff_is_against_the_clone(
    alice, repo_project, gitserver, script, make_session, module_workers
):
    repo_project(gitserver.url("public/demo.git"), setup="echo setup-ran > .setup-marker")
    module_workers({"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1"})
    script_id = script.load(
        [
            [call("bash", "c1", command="cat README.md .setup-marker; ls -a", description="look")],
            [call("read", "c2", filePath="/workspace/README.md")],
            [call("edit", "c3", filePath="/workspace/README.md", oldString="# demo", newString="# demo v2")],
            [{"text": "Edited."}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("look and edit"))
    session = wait_idle(session, timeout=120)
    tools = tool_parts(session)
    seen = list(Event.objects.filter(session=session).order_by("seq").values_list("type", "payload"))
    assert [(t["tool"], t["state"]["status"]) for t in tools] == [
        ("bash", "completed"),
        ("read", "completed"),
        ("edit", "completed"),
    ], seen
    output = tools[0]["state"]["output"]
    assert "# demo" in output and "setup-ran" in output and ".git\n" not in output
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "ready" and row.base_commit == gitserver.head("public/demo.git", "main")
    patches = [p.data["files"] for p in Part.objects.filter(session=session, type="patch")]
    assert patches == [["/workspace/README.md"]]
    types = list(Event.objects.filter(session=session).order_by("seq").values_list("type", "payload"))
    ready = next(
        i for i, (t, p) in enumerate(types) if t == "workspace.updated" and p["workspace"]["state"] == "ready"
    )
    first_tool = next(
        i for i, (t, p) in enumerate(types) if t == "message.part.updated" and p["part"]["type"] == "tool"
    )
    assert ready < first_tool


def test_creating_a_session_prepares_its_workspace_before_any_prompt(
    api, alice, repo_project, gitserver, module_workers, sessions_made
):
    from tests.engine.conftest import wait_for

    repo_project(gitserver.url("public/demo.git"), setup="echo prepared")
    module_workers({"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1"})
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    response = api(alice).post(base, {"title": "t"}, format="json")
    assert response.status_code == 201, response.content
    session_id = response.json()["id"]
    sessions_made.append(session_id)

    def ready():
        return SessionWorkspace.objects.filter(session_id=session_id, state="ready").first()

    row = wait_for(ready, timeout=120, what="the workspace prepared by the worker")
    assert row.setup_exit_code == 0 and "prepared" in row.setup_log
    assert not Part.objects.filter(session_id=session_id).exists()  # no prompt was needed
