"""The project's setup script runs in the sandbox after the clone and before the first prompt, with the
project's sandbox-safe env; its output is streamed to the session's events; a failure marks the session."""

import pytest

from hangar.conversations.models import Event
from hangar.conversations.services import session_create
from hangar.engine.workspace.prepare import WorkspaceError
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects.env_var_services import env_var_set
from hangar.repos.models import SessionWorkspace

# Transactional: the setup output is published from a thread of its own, on its own connection.
pytestmark = [pytest.mark.timeout(180), pytest.mark.django_db(transaction=True)]

SETUP = """set -e
echo "installing for $APP_MODE"
test -f README.md && echo "the clone is here"
echo "secret is [${DB_PASSWORD:-unset}]"
sleep 0.6
echo built > .setup-done
echo "done"
"""


def _session(persona, made):
    session = session_create(actor=persona.actor, project=persona.project, title="t")
    made.append(session.pk)
    return session


def test_a_setup_script_runs_after_the_clone_with_sandbox_safe_env_and_streams_its_output(
    alice, repo_project, gitserver, sessions_made
):
    project = repo_project(gitserver.url("public/demo.git"), setup=SETUP)
    env_var_set(actor=alice.actor, project=project, name="APP_MODE", value="testing", secret=False)
    env_var_set(actor=alice.actor, project=project, name="DB_PASSWORD", value="hunter2-secret", secret=True)
    session = _session(alice, sessions_made)
    box = sandbox_for(session)
    assert box.read(".setup-done").content == "built"
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "ready" and row.setup_exit_code == 0
    assert "installing for testing" in row.setup_log and "the clone is here" in row.setup_log
    assert "secret is [unset]" in row.setup_log and "hunter2" not in row.setup_log
    events = list(Event.objects.filter(session=session).order_by("seq"))
    streamed = "".join(e.payload["text"] for e in events if e.type == "workspace.setup.output")
    assert "installing for testing" in streamed and "done" in streamed
    # More than one batch: the output arrived while the script ran, not only at its end.
    assert sum(e.type == "workspace.setup.output" for e in events) >= 2
    phases = [e.payload["workspace"]["error"] for e in events if e.type == "workspace.updated"]
    assert {"phase": "clone"} in phases and {"phase": "setup"} in phases
    assert events[-1].type == "workspace.updated" and events[-1].payload["workspace"]["state"] == "ready"


def test_a_failing_setup_script_marks_the_session_with_a_clear_error_and_its_log(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(
        gitserver.url("public/demo.git"), setup="echo compiling; echo 'boom: missing dep' >&2; exit 3"
    )
    session = _session(alice, sessions_made)
    with pytest.raises(WorkspaceError, match="setup script failed"):
        sandbox_for(session)
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "failed" and row.error["kind"] == "setup" and row.setup_exit_code == 3
    assert "compiling" in row.setup_log and "boom: missing dep" in row.setup_log
    told = Event.objects.filter(session=session, type="workspace.updated").order_by("seq").last()
    assert "exit code 3" in told.payload["workspace"]["error"]["message"]


def test_a_project_without_a_repository_still_runs_its_setup_script(alice, allow_private, sessions_made):
    project = alice.project
    project.setup_script = "echo hi > hello.txt"
    project.save()
    session = _session(alice, sessions_made)
    assert sandbox_for(session).read("hello.txt").content == "hi"
    assert SessionWorkspace.objects.get(session=session).repo_url == ""
