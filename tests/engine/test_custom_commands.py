# ruff: noqa: F811  (the fixtures imported below are the parameters of the tests)
"""Commands a team defines in its workspace (`.opencode/commands/**/*.md`), run by OpenCode's
`POST /session/{id}/command` and Hangar's `/api/.../command/`, in a real worker with the Docker sandbox
and the scripted model: the template filled from the arguments becomes the prompt, by the command's
agent; a `subtask` command runs as a child session; an unknown or broken command is a 400 that says
why; another org's session is a 404 on both routes."""

from __future__ import annotations

import pytest

from hangar.conversations.models import Message
from hangar.engine.agents.custom_commands import render
from hangar.engine.session.system import prompt_text
from hangar.engine.workspace.sandboxes import sandbox_for
from tests.engine.conftest import wait_idle
from tests.engine.test_subagents import children_of, oc_client, routed_session  # noqa: F401
from tests.opencode.conftest import assert_response, base_url

pytestmark = pytest.mark.django_db(transaction=True)
PLAN_REMINDER = prompt_text("plan").splitlines()[1]  # "Plan mode is active..."


def api_url(persona, session) -> str:
    return f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/command/"


def user_text(session) -> str:
    message = Message.objects.filter(session=session, role="user").order_by("-id").first()
    return "".join(p.data.get("text", "") for p in message.parts.all() if p.data["type"] == "text")


def test_the_template_is_filled_as_opencode_fills_it():
    assert render("Fix $ARGUMENTS now", "the flaky test") == "Fix the flaky test now"
    assert render("Move $1 to $2", 'a.py "new dir/b.py" extra') == "Move a.py to new dir/b.py extra"
    assert render("Greet $1 and $3", "ann") == "Greet ann and "
    assert render("Summarise the repo", "briefly") == "Summarise the repo\n\nbriefly"
    assert render("Quote $1", "'unbalanced") == "Quote 'unbalanced"


def test_a_command_runs_its_template_by_its_agent(alice, charlie, script, make_session, worker, api):
    turns = script.load([[{"text": "planned"}]])
    session = make_session(alice, turns)
    sandbox_for(session).write(
        "/workspace/.opencode/commands/plan-fix.md",
        "---\ndescription: Plan a fix\nagent: plan\n---\nPlan a fix for $1 in $ARGUMENTS\n",
    )
    response = api(alice).post(
        api_url(alice, session), {"command": "plan-fix", "arguments": "bug-42"}, format="json"
    )
    assert response.status_code == 202, response.content
    session = wait_idle(session)
    assert user_text(session) == "Plan a fix for bug-42 in bug-42"
    assert session.agent == "plan"
    request = [r for r in script.requests(turns) if r.get("tools")][-1]
    sent = [m for m in request["messages"] if m["role"] == "user"]
    assert "Plan a fix for bug-42 in bug-42" in str(sent[0]["content"])
    assert any(PLAN_REMINDER in str(m["content"]) for m in sent[1:])  # run by the plan agent
    # OpenCode's list: the newest session's workspace commands (its sandbox runs), in OpenCode's shape.
    listed = oc_client(alice).get(f"{base_url(alice)}/command")
    assert_response(listed, "/command")
    assert [c["name"] for c in listed.json()] == ["init", "review", "plan-fix"]  # the built-ins first
    assert listed.json()[2:] == [
        {
            "name": "plan-fix",
            "source": "command",
            "template": "Plan a fix for $1 in $ARGUMENTS",
            "description": "Plan a fix",
            "agent": "plan",
            "hints": ["$1", "$ARGUMENTS"],
        }
    ]
    # Another org's member: the session is not there.
    assert (
        api(charlie).post(api_url(alice, session), {"command": "plan-fix"}, format="json").status_code == 404
    )


def test_a_subtask_command_runs_in_a_child_session_over_opencodes_route(
    alice,
    charlie,
    script,
    routed_session,
    worker,
):
    kid = script.load([[{"text": "tests written"}]])
    parent = script.load([[{"text": "the task is done"}]])
    session = routed_session(alice)
    sandbox_for(session).write(
        "/workspace/.opencode/commands/qa/write-tests.md",
        f"---\ndescription: Write tests\nagent: general\nsubtask: true\n---\n[[script:{kid}]] tests for $ARGUMENTS\n",
    )
    # The parent's own turn after the task (its script chosen by the first user message's marker).
    from hangar.engine.services import session_prompt
    from tests.engine.conftest import text_prompt

    session_prompt(actor=alice.actor, session=session, parts=text_prompt(f"[[script:{parent}]] hello"))
    session = wait_idle(session)
    url = f"{base_url(alice)}/session/{session.pk}/command"
    response = oc_client(alice).post(
        url, {"command": "qa/write-tests", "arguments": "the parser"}, format="json"
    )
    assert_response(response, "/session/{sessionID}/command", "post")
    assert response.json()["info"]["role"] == "assistant"
    (child,) = children_of(session)
    assert child.title == "Write tests (@general)"
    assert Message.objects.filter(session=child, role="assistant").exists()
    first_child_prompt = Message.objects.filter(session=child, role="user").order_by("id").first()
    assert "tests for the parser" in "".join(p.data.get("text", "") for p in first_child_prompt.parts.all())
    assert oc_client(charlie).post(url, {"command": "qa/write-tests"}, format="json").status_code == 404


def test_an_unknown_or_broken_command_is_refused_naming_it(alice, script, make_session, api):
    session = make_session(alice, script.load([[{"text": "never"}]]))
    box = sandbox_for(session)
    box.write("/workspace/.opencode/commands/ok.md", "Do it\n")
    box.write("/workspace/.opencode/commands/broken.md", "---\nsubtask: maybe\n---\nx\n")
    response = api(alice).post(api_url(alice, session), {"command": "nope"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["command"] == ["no command named 'nope': init, ok, review"]
    response = api(alice).post(api_url(alice, session), {"command": "broken"}, format="json")
    assert response.status_code == 400
    assert (
        "commands/broken.md: subtask must be true or false"
        in response.json()["error"]["fields"]["command"][0]
    )
    assert not Message.objects.filter(session=session).exists()


def test_shell_output_fills_the_template_where_the_bash_rules_allow_it(alice, script, make_session, api):
    alice.project.permission_rules = [{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    alice.project.save()
    session = make_session(alice, script.load([[{"text": "never"}]]))
    box = sandbox_for(session)
    box.write("/workspace/keep.txt", "kept\n")
    box.write("/workspace/.opencode/commands/status.md", "Files now: !`ls /workspace | grep -c . ` for $1\n")
    box.write("/workspace/.opencode/commands/wipe.md", "Wipe: !`rm -f /workspace/keep.txt` and !`echo hi`\n")
    response = api(alice).post(
        api_url(alice, session), {"command": "status", "arguments": "bob"}, format="json"
    )
    assert response.status_code == 202, response.content
    assert user_text(session) == "Files now: 1 for bob"  # the output of a command run in the sandbox

    response = api(alice).post(api_url(alice, session), {"command": "wipe"}, format="json")
    assert response.status_code == 400
    assert (
        "do not let `rm -f /workspace/keep.txt` run without asking"
        in response.json()["error"]["fields"]["command"][0]
    )
    assert box.read("/workspace/keep.txt").content == "kept"  # nothing ran, not even the allowed echo
    assert Message.objects.filter(session=session).count() == 1


@pytest.mark.parametrize(
    ("template", "arguments"),
    [
        ('Say !`echo "$(rm -f /workspace/keep.txt)"`\n', ""),
        ("Say !`echo $(rm -f /workspace/keep.txt)`\n", ""),
        ('Say !`X="$(rm -f /workspace/keep.txt)" true`\n', ""),
        ("List !`ls $1`\n", "'x; rm -f /workspace/keep.txt'"),
        ("List !`ls $1`\n", "'x && cat /etc/hostname > keep.txt'"),
    ],
    ids=["quoted substitution", "substitution", "assignment prefix", "argument", "external path"],
)
def test_it_checks_each_simple_command_of_a_shell_snippet_after_the_arguments_are_filled(
    alice, script, make_session, api, template, arguments
):
    alice.project.permission_rules = [{"permission": "bash", "pattern": "rm *", "action": "deny"}]
    alice.project.save()
    session = make_session(alice, script.load([[{"text": "never"}]]))
    box = sandbox_for(session)
    box.write("/workspace/keep.txt", "kept\n")
    box.write("/workspace/.opencode/commands/sneak.md", template)
    response = api(alice).post(
        api_url(alice, session), {"command": "sneak", "arguments": arguments}, format="json"
    )
    assert response.status_code == 400, response.content
    assert "run without asking" in response.json()["error"]["fields"]["command"][0]
    assert box.read("/workspace/keep.txt").content == "kept"
    assert not Message.objects.filter(session=session).exists()


def test_files_a_template_names_with_at_are_read_into_the_prompt(alice, script, make_session, api):
    session = make_session(alice, script.load([[{"text": "never"}]]))
    box = sandbox_for(session)
    box.write("/workspace/src/app.py", "print('hi')\n")
    box.write("/workspace/.opencode/commands/review.md", "Review @src/app.py and @nobody for $1\n")
    response = api(alice).post(
        api_url(alice, session), {"command": "review", "arguments": "style"}, format="json"
    )
    assert response.status_code == 202, response.content
    message = Message.objects.filter(session=session, role="user").get()
    parts = [p.data for p in message.parts.order_by("id")]
    assert parts[0]["text"] == "Review @src/app.py and @nobody for style"
    assert parts[1]["synthetic"] and '"filePath": "/workspace/src/app.py"' in parts[1]["text"]
    assert "1: print('hi')" in parts[2]["text"]
    # A file part for what exists; `@nobody` names nothing in the workspace and stays text.
    assert [(p["type"], p.get("filename")) for p in parts[3:]] == [("file", "src/app.py")]
