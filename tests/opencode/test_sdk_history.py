"""The stock JS SDK (@opencode-ai/sdk v2) on issue 30's routes: after a run that wrote a file, it reads the
change through /vcs/status and /vcs/diff (naming the session by its workspace directory), edits the user's
text part, and deletes a message; Postgres holds exactly what it said."""

import pytest

from hangar.conversations.models import Message, Part
from hangar.engine.workspace.sandboxes import manager
from tests.opencode.live import call, run_sdk_flow

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sdk_reads_the_vcs_diff_edits_a_part_and_deletes_a_message(
    alice, daphne, worker, scripted_project, sessions_made
):
    project = scripted_project(
        alice,
        [
            [call("write", "w1", filePath="/workspace/notes.txt", content="one\ntwo\n")],
            [{"text": "Wrote it."}],
        ],
        title="SDK history",
    )
    out = run_sdk_flow("history_flow.mjs", daphne, project, alice)
    try:
        assert out["status"] == [{"file": "notes.txt", "additions": 2, "deletions": 0, "status": "added"}]
        (diff,) = out["diff"]
        assert diff["file"] == "notes.txt" and "+one\n+two\n" in diff["patch"]
        assert out["edited"]["text"] == "write it, please" and out["userText"] == "write it, please"
        assert out["deleted"] is True
        assert out["after"] == [m for m in out["before"] if m != out["deletedID"]]
        assert not Message.objects.filter(pk=out["deletedID"]).exists()
        assert not Part.objects.filter(message_id=out["deletedID"]).exists()
        assert (
            list(
                Message.objects.filter(session_id=out["sessionID"])
                .order_by("id")
                .values_list("pk", flat=True)
            )
            == out["after"]
        )
    finally:
        manager().destroy(out["sessionID"])
