"""The stock JS SDK (@opencode-ai/sdk v2) over what the TUI's `!`, `/init` and `/share` call, against a live
Hangar (Daphne, a worker, the Docker sandbox, the scripted model): session.shell runs in the sandbox and
answers OpenCode's message; session.init runs the built-in init command and the model writes AGENTS.md;
session.share gives a link whose view opens for the member, session.unshare revokes it; another org's
token gets a 404 for each."""

import pytest

from hangar.engine.workspace.sandboxes import manager
from tests.opencode.live import call, run_sdk_flow

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sdk_shells_inits_shares_and_unshares(alice, charlie, daphne, worker, scripted_project):
    project = scripted_project(
        alice,
        [
            [call("write", "c1", filePath="/workspace/AGENTS.md", content="# Agents\n\nRun `make test`.\n")],
            [{"text": "Wrote AGENTS.md."}],
        ],
        title="Init session",
    )
    out = run_sdk_flow(
        "share_shell_init_flow.mjs",
        daphne,
        project,
        alice,
        OC_OTHER_TOKEN=charlie.token,
        OC_MODEL=project.default_model,
    )
    try:
        assert out["shell"]["role"] == "assistant"
        assert out["shell"]["parts"] == [
            {"tool": "bash", "status": "completed", "output": "from-the-shell\n"}
        ]
        assert out["init"] is True
        roles = [m["role"] for m in out["messages"]]
        assert roles[:2] == ["user", "assistant"] and roles.count("user") == 2
        shell_note = out["messages"][0]["parts"][0]
        assert shell_note["text"] == "The following tool was executed by the user" and shell_note["synthetic"]
        init_prompt = " ".join(p.get("text") or "" for p in out["messages"][2]["parts"])
        assert "Write or update the file AGENTS.md" in init_prompt
        assert any(p.get("text") == "Wrote AGENTS.md." for m in out["messages"] for p in m["parts"])
        box = manager().connect(out["sessionID"])
        assert "make test" in box.read("/workspace/AGENTS.md").content
        assert "/share/" in out["shareURL"]
        assert out["view"]["status"] == 200 and out["view"]["messages"] == len(out["messages"])
        assert out["other"] == {"shell": 404, "share": 404, "unshare": 404}
        assert out["unshared"] is None and out["afterUnshare"] == 404
    finally:
        manager().destroy(out["sessionID"])
