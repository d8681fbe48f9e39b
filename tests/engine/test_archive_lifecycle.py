"""Archiving hibernates a session's sandbox and keeps its workspace; unarchiving brings the files back;
only deleting destroys them (and the workspace's periodic checkpoint), after a grace period; only the
session's creator or an org admin archives.
A real worker, the real Docker sandbox, the real reaper task (run here, in this process)."""

import pytest

from hangar.conversations.models import Session
from hangar.conversations.session_services import session_delete
from hangar.engine.services import session_prompt
from hangar.engine.tasks import reap_sandboxes, workspace_checkpoints
from hangar.engine.workspace.sandboxes import manager
from sandbox import registry, volumes, workspace_archive
from tests.engine.conftest import text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def call(name, call_id, **arguments):
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}


def _url(persona, session, action):
    return f"/api/orgs/{persona.org.slug}/projects/{session.project_id}/sessions/{session.pk}/{action}/"


def _has_workspace(session) -> bool:
    return registry.lookup(volumes.session_key(session.pk)) is not None


def test_archiving_hibernates_the_sandbox_and_unarchiving_brings_the_files_back(
    alice, api, script, make_session, worker, settings
):
    settings.HANGAR_SANDBOX_ARCHIVED_IDLE_S = 0
    script_id = script.load(
        [
            [call("write", "w1", filePath="/workspace/keep.txt", content="precious\n")],
            [{"text": "written"}],
            [call("bash", "b1", command="cat /workspace/keep.txt", description="read it back")],
            [{"text": "read"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write keep.txt"))
    wait_idle(session, timeout=120)
    assert manager().is_running(session.pk)

    assert api(alice).post(_url(alice, session, "archive")).status_code == 200
    reap_sandboxes()
    assert not manager().is_running(session.pk), "an archived session's sandbox is hibernated"
    assert _has_workspace(session), "an archived session keeps its workspace"

    assert api(alice).post(_url(alice, session, "unarchive")).status_code == 200
    session = Session.objects.get(pk=session.pk)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("read it back"))
    wait_idle(session, timeout=120)
    bash = [p for p in tool_parts(session) if p["tool"] == "bash"][-1]
    assert bash["state"]["status"] == "completed", bash["state"]
    assert "precious" in bash["state"]["output"]


def test_only_the_creator_or_an_org_admin_archives_a_session(alice, bob, api, script, make_session):
    alices = make_session(alice, script.load([[{"text": "hi"}]]))
    bobs = make_session(bob, script.load([[{"text": "hi"}]]))
    assert api(bob).post(_url(bob, alices, "archive")).status_code == 403
    assert Session.objects.get(pk=alices.pk).archived_at is None
    assert api(bob).post(_url(bob, bobs, "archive")).status_code == 200
    assert api(bob).post(_url(bob, bobs, "unarchive")).status_code == 200
    assert api(alice).post(_url(alice, bobs, "archive")).status_code == 200  # alice owns the org
    assert api(bob).post(_url(bob, bobs, "unarchive")).status_code == 200


def test_a_deleted_sessions_workspace_is_destroyed_only_after_the_grace_period(
    alice, script, make_session, worker, settings, tmp_path, monkeypatch
):
    monkeypatch.setenv(workspace_archive.SETTING, str(tmp_path / "archive"))  # checkpoints kept there
    session = make_session(
        alice, script.load([[call("write", "w1", filePath="a.txt", content="x")], [{"text": "ok"}]])
    )
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("write"))
    wait_idle(session, timeout=120)
    # Beat's checkpoint sweep, run here by this host (the worker's, with Docker): the live workspace that
    # changed is copied as the session's checkpoint.
    wait_for(lambda: workspace_checkpoints()["made"] == [session.pk], 30, what="checkpointed")
    checkpoint = workspace_archive.checkpoint_paths(session.pk)
    assert all(path.exists() for path in checkpoint)
    session_delete(actor=alice.actor, session=session)

    settings.HANGAR_SANDBOX_DELETE_GRACE_S = 3600
    reap_sandboxes()
    assert _has_workspace(session) and not manager().is_running(session.pk)
    assert all(path.exists() for path in checkpoint), "hibernated: its checkpoint stays"

    settings.HANGAR_SANDBOX_DELETE_GRACE_S = 0
    reap_sandboxes()
    assert not _has_workspace(session)
    assert not any(path.exists() for path in checkpoint), "destroyed: its checkpoint goes with it"
