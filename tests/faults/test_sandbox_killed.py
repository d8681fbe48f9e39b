"""The session's sandbox container killed (`docker kill`) while a command runs in it: the command's tool
call ends in an error at once, the run goes on, the next command gets a sandbox again on the same
workspace, and the session finishes."""

import docker
import pytest

from hangar.engine.services import session_prompt
from sandbox.containers import session_container_name
from tests.engine.conftest import text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.faults.checks import assert_nothing_busy, assert_sound_log, assert_stream_resumes, bash, seq_now

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


def test_a_sandbox_killed_mid_command_fails_that_call_and_the_session_goes_on(
    alice, script, make_session, worker
):
    script_id = script.load(
        [
            [{"text": "Running it."}, bash("c1", "echo kept > /workspace/kept.txt && sleep 300")],
            [bash("c2", "cat /workspace/kept.txt")],
            [{"text": "went on"}],
        ]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("long command"))
    wait_for(lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running")

    killed_at = seq_now(session)
    docker.from_env().containers.get(session_container_name(session.pk)).kill()
    session = wait_idle(session, timeout=45)  # far less than the command would take

    first, second = tool_parts(session)
    assert first["state"]["status"] == "error" and first["state"]["error"], first["state"]
    # The next command gets a sandbox again, on the same workspace.
    assert second["state"]["status"] == "completed" and second["state"]["output"].strip() == "kept"
    assert text_of(session) == "Running it.went on"
    assert_sound_log(session)
    assert_stream_resumes(alice, session, after=killed_at)
    assert_nothing_busy()
