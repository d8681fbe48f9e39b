"""The stock JS SDK (@opencode-ai/sdk v2, as the CLI uses it) against a Hangar project: subscribe,
create, prompt_async, a permission asked and replied "once", idle, messages and todos."""

import pytest

from hangar.conversations.models import PermissionRequest
from hangar.engine.workspace.sandboxes import manager
from tests.opencode.live import call, run_sdk_flow

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_sdk_creates_prompts_streams_replies_to_a_permission_and_lists_messages(
    alice, daphne, worker, scripted_project
):
    project = scripted_project(
        alice,
        [
            [
                call(
                    "todowrite",
                    "c1",
                    todos=[{"content": "say hello", "status": "in_progress", "priority": "high"}],
                )
            ],
            [call("bash", "c2", command="echo hello from the sandbox", description="Say hello")],
            [{"text": "All done."}],
        ],
        title="SDK session",
    )
    project.permission_rules = [{"permission": "bash", "pattern": "*", "action": "ask"}]
    project.save()

    out = run_sdk_flow("sdk_flow.mjs", daphne, project, alice, OC_PROMPT="say hello")
    try:
        assert out["eventTypes"][0] == "server.connected"
        for expected in [
            "session.created",
            "message.updated",
            "message.part.updated",
            "permission.asked",
            "permission.replied",
            "todo.updated",
            "session.status",
            "session.idle",
        ]:
            assert expected in out["eventTypes"], expected
        assert "All done." in out["deltas"]
        assert out["permission"]["permission"] == "bash" and out["permission"]["replied"] is True
        assert out["permission"]["id"] in out["permission"]["pendingListed"]
        assert PermissionRequest.objects.get(pk=out["permission"]["id"]).status == "once"
        roles = [m["role"] for m in out["messages"]]
        assert roles[0] == "user" and roles.count("assistant") == 3
        tools = [p for m in out["messages"] for p in m["parts"] if p["type"] == "tool"]
        assert [(t["tool"], t["status"]) for t in tools] == [
            ("todowrite", "completed"),
            ("bash", "completed"),
        ]
        assert "hello from the sandbox" in tools[1]["output"]
        assert any(p.get("text") == "All done." for p in out["messages"][-1]["parts"])
        assert out["todos"] == [{"content": "say hello", "status": "in_progress", "priority": "high"}]
    finally:
        manager().destroy(out["sessionID"])
