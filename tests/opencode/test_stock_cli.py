"""The stock OpenCode CLI (npm opencode-ai 1.18.33) drives a Hangar project through its base URL:
`opencode run --attach <base> -p <token> --format json "<prompt>"`."""

import json
import subprocess

import pytest

from hangar.conversations.models import Session
from hangar.engine.workspace.sandboxes import manager
from tests.opencode.conftest import assert_matches, schema_of
from tests.opencode.live import OPENCODE_BIN, call, opencode_env

pytestmark = pytest.mark.django_db(transaction=True)


def opencode_run(
    base: str, token: str, prompt: str, tmp_path, timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(OPENCODE_BIN), "run", "--attach", base, "-p", token, "--format", "json", prompt],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=opencode_env(tmp_path),
        cwd=tmp_path,
    )


def test_opencode_run_attach_writes_and_runs_a_file_in_the_sandbox(
    alice, daphne, worker, scripted_project, tmp_path
):
    project = scripted_project(
        alice,
        [
            [
                {"text": "Writing it."},
                call("write", "c1", filePath="/workspace/hi.py", content="print('hi from hangar')\n"),
            ],
            [call("bash", "c2", command="python3 /workspace/hi.py", description="Run hi.py")],
            [{"text": "It prints: hi from hangar"}],
        ],
    )
    done = opencode_run(f"{daphne.url}/oc/{project.pk}", alice.token, "write hi.py and run it", tmp_path)

    assert done.returncode == 0, done.stderr[-3000:]
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    session_id = events[0]["sessionID"]
    session = Session.objects.get(pk=session_id)
    try:
        assert session.project_id == project.pk and session.org_id == alice.org.pk
        tools = [(e["part"]["tool"], e["part"]["state"]["status"]) for e in events if e["type"] == "tool_use"]
        assert tools == [("write", "completed"), ("bash", "completed")]
        bash = next(e["part"] for e in events if e["type"] == "tool_use" and e["part"]["tool"] == "bash")
        assert "hi from hangar" in bash["state"]["output"]
        assert [e["part"]["text"] for e in events if e["type"] == "text"][-1] == "It prints: hi from hangar"
        assert [e["type"] for e in events].count("step_start") == 3
        assert [e["part"]["reason"] for e in events if e["type"] == "step_finish"][-1] == "stop"
        assert (
            manager().connect(session_id).read("/workspace/hi.py").content.rstrip("\n")
            == "print('hi from hangar')"
        )
    finally:
        manager().destroy(session_id)


def test_opencode_run_attach_with_another_orgs_token_fails_without_touching_the_project(
    alice, charlie, daphne, scripted_project, tmp_path
):
    project = scripted_project(alice, [[{"text": "never"}]])
    done = opencode_run(f"{daphne.url}/oc/{project.pk}", charlie.token, "hello", tmp_path, timeout=60)
    assert done.returncode != 0 or not done.stdout.strip()
    assert not Session.objects.filter(project=project).exists()


def test_opencode_run_attach_exits_with_the_error_of_a_run_that_cannot_start(
    alice, daphne, worker, scripted_project, tmp_path, oc
):
    project = scripted_project(alice, [[{"text": "never"}]])
    project.default_model = "nobody-configured-this/some-model"  # no credential for its provider
    project.save()
    done = opencode_run(f"{daphne.url}/oc/{project.pk}", alice.token, "hello", tmp_path, timeout=90)

    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    errors = [e["error"] for e in events if e["type"] == "error"]
    assert [e["name"] for e in errors] == ["ProviderAuthError"], done.stdout[-2000:] + done.stderr[-2000:]
    assert "no credential" in errors[0]["data"]["message"]
    session = Session.objects.get(project=project)
    assert session.status == "idle"
    # The prompt is answered by the error, in OpenCode's shape, for any client that reloads.
    messages = oc(alice).get(f"/oc/{project.pk}/session/{session.pk}/message").json()
    assert [m["info"]["role"] for m in messages] == ["user", "assistant"]
    answer = messages[1]["info"]
    assert_matches(answer, schema_of("AssistantMessage"))
    assert answer["error"] == {
        "name": "ProviderAuthError",
        "data": {"providerID": "nobody-configured-this", "message": errors[0]["data"]["message"]},
    }
