"""The stock JS SDK (@opencode-ai/sdk v2, as the CLI uses it) drives a session's file history against
Hangar served by Daphne: a prompt whose run writes files (its session.diff event and GET diff), a revert to
that prompt (the file gone from the sandbox), an unrevert (back), and a fork at it (a new session without
the prompt, its own sandbox without the file)."""

import pytest

from hangar.conversations.models import Message
from hangar.engine.workspace.sandboxes import manager
from tests.opencode.live import call, run_sdk_flow

pytestmark = pytest.mark.django_db(transaction=True)


def sdk(daphne, project, persona, step: str, session_id: str = "") -> dict:
    return run_sdk_flow("revert_flow.mjs", daphne, project, persona, OC_STEP=step, OC_SESSION=session_id)


def exists(session_id: str, path: str) -> bool:
    return manager().connect(session_id).stat(path) is not None


def test_the_sdk_reverts_unreverts_and_forks_a_session(
    alice, daphne, worker, scripted_project, sessions_made
):
    project = scripted_project(
        alice,
        [
            [call("write", "c1", filePath="/workspace/made.txt", content="made\nby the agent\n")],
            [{"text": "ok"}],
        ],
    )
    out = sdk(daphne, project, alice, "prompt")
    session_id = out["sessionID"]
    sessions_made.append(session_id)
    assert [(d["file"], d["additions"], d["status"]) for d in out["diff"]] == [("made.txt", 2, "added")]
    assert [d["file"] for d in out["told"]] == ["made.txt"]
    assert exists(session_id, "/workspace/made.txt")

    out = sdk(daphne, project, alice, "revert", session_id)
    assert out["session"]["revert"]["messageID"] == out["messageID"]
    assert not exists(session_id, "/workspace/made.txt")

    out = sdk(daphne, project, alice, "unrevert", session_id)
    assert "revert" not in out["session"]
    assert exists(session_id, "/workspace/made.txt")

    out = sdk(daphne, project, alice, "fork", session_id)
    forked = out["session"]["id"]
    sessions_made.append(forked)
    assert out["session"]["title"].endswith("(fork #1)")
    assert not Message.objects.filter(session_id=forked).exists()  # forked at the only prompt
    assert not exists(forked, "/workspace/made.txt") and exists(session_id, "/workspace/made.txt")
