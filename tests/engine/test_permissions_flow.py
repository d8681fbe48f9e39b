"""Permission asks park the run without holding a worker; replies resume it (seed 000 §7)."""

import pytest

from hangar.accounts.org_policy_services import org_permission_policy_set
from hangar.audit.models import ActorType, AuditEvent
from hangar.conversations.models import PermissionGrant, PermissionRequest, Session
from hangar.engine.reply_services import permission_reply
from hangar.engine.run.worker import run_session_once
from hangar.engine.services import session_abort, session_prompt
from hangar.projects.models import Project
from tests.engine.conftest import assistant_messages, text_of, text_prompt, tool_parts, wait_for, wait_idle

pytestmark = pytest.mark.django_db(transaction=True)


def bash(call_id, command):
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


def ask_for_bash(project: Project) -> None:
    Project.objects.filter(pk=project.pk).update(
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )


def pending_request(session) -> PermissionRequest:
    return wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(),
        what="a pending permission request",
    )


def parked(session) -> Session:
    """The run is parked: the lease is free (no worker holds the session) and nothing is queued."""

    def check():
        s = Session.objects.get(pk=session.pk)
        return s if not s.lease_owner and not s.run_requested else None

    return wait_for(check, what="the run to release its lease")


def test_ask_then_once_runs_the_waiting_call_and_releases_the_worker_while_waiting(
    alice, script, make_session, worker
):
    ask_for_bash(alice.project)
    script_id = script.load([[bash("c1", "echo approved-once")], [{"text": "ran it"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run it"))

    request = pending_request(session)
    waiting = parked(session)
    assert waiting.status == "busy" and waiting.lease_expires_at is None
    assert request.permission == "bash" and request.call_id == "c1"
    assert tool_parts(session)[0]["state"]["status"] == "running"

    permission_reply(actor=alice.actor, request=request, reply="once")
    session = wait_idle(session)
    part = tool_parts(session)[0]
    assert part["state"]["status"] == "completed" and "approved-once" in part["state"]["output"]
    assert assistant_messages(session)[-1]["finish"] == "stop"
    assert not PermissionGrant.objects.filter(project=alice.project).exists()


def test_abort_while_a_permission_is_pending_rejects_it_and_the_next_prompt_runs(
    alice, script, make_session, worker
):
    ask_for_bash(alice.project)
    script_id = script.load([[bash("c1", "echo never")], [{"text": "after the abort"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run it"))
    request = pending_request(session)
    parked(session)

    session_abort(actor=alice.actor, session=session)
    session = wait_idle(session)
    request.refresh_from_db()
    assert request.status == "reject"
    assert tool_parts(session)[0]["state"]["error"] == "Tool execution aborted"
    assert assistant_messages(session)[-1]["error"]["name"] == "MessageAbortedError"
    assert not session.abort_requested

    session_prompt(actor=alice.actor, session=session, parts=text_prompt("go on"))
    session = wait_idle(session)
    assert assistant_messages(session)[-1].get("error") is None
    assert text_of(session) == "after the abort"


def test_a_request_the_abort_rejects_is_audited_as_the_runners_reply(alice, script, make_session):
    ask_for_bash(alice.project)
    session = make_session(alice, script.load([[bash("c1", "echo never")]]))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run it"))
    run_session_once(session.pk)  # in this process: parks on the ask
    request = PermissionRequest.objects.get(session=session, status="pending")

    session_abort(actor=alice.actor, session=session)
    run_session_once(session.pk)

    replies = AuditEvent.objects.filter(action="permission.reply", target_id=request.pk)
    assert [(e.actor_type, e.actor_label, e.data["reply"]) for e in replies] == [
        (ActorType.SYSTEM, "runner", "reject")
    ]
    assert replies[0].org_id == alice.org.pk


def test_always_with_project_scope_stores_a_grant_that_covers_the_next_call(
    alice, script, make_session, worker
):
    ask_for_bash(alice.project)
    script_id = script.load([[bash("c1", "echo one")], [bash("c2", "echo two")], [{"text": "both ran"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run twice"))

    request = pending_request(session)
    permission_reply(actor=alice.actor, request=request, reply="always", scope="project")
    session = wait_idle(session)
    assert [p["state"]["status"] for p in tool_parts(session)] == ["completed", "completed"]
    assert PermissionRequest.objects.filter(session=session).count() == 1
    grant = PermissionGrant.objects.get(project=alice.project)
    assert (grant.scope, grant.permission, grant.session_id) == ("project", "bash", None)


def test_reject_without_a_message_stops_the_turn(alice, script, make_session, worker):
    ask_for_bash(alice.project)
    script_id = script.load([[bash("c1", "rm -rf /workspace/*")], [{"text": "should never be asked"}]])
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("clean up"))

    permission_reply(actor=alice.actor, request=pending_request(session), reply="reject")
    session = wait_idle(session)
    part = tool_parts(session)[0]
    assert part["state"]["status"] == "error" and "rejected" in part["state"]["error"]
    assert len([r for r in script.requests(script_id) if r.get("stream")]) == 1  # the turn stopped
    assert assistant_messages(session)[-1]["finish"] == "stop"


def test_reject_with_a_message_feeds_it_back_to_the_model(alice, script, make_session, worker):
    ask_for_bash(alice.project)
    script_id = script.load(
        [[bash("c1", "rm -rf /workspace/*")], [{"text": "ok, I will not delete anything"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("clean up"))

    permission_reply(
        actor=alice.actor, request=pending_request(session), reply="reject", message="never delete files"
    )
    session = wait_idle(session)
    part = tool_parts(session)[0]
    assert part["state"]["status"] == "error" and "never delete files" in part["state"]["error"]
    second = [r for r in script.requests(script_id) if r.get("stream")][1]
    tool_result = next(m for m in second["messages"] if m["role"] == "tool")
    assert "never delete files" in tool_result["content"]


def test_an_org_deny_beats_a_project_allow(alice, script, make_session, worker):
    Project.objects.filter(pk=alice.project.pk).update(
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "allow"}]
    )
    org_permission_policy_set(
        actor=alice.actor,
        org=alice.org,
        rules=[{"permission": "bash", "pattern": "curl *", "action": "deny"}],
    )
    script_id = script.load(
        [[bash("c1", "curl http://example.com")], [bash("c2", "echo allowed")], [{"text": "done"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("fetch it"))
    session = wait_idle(session)
    denied, allowed = tool_parts(session)
    assert denied["state"]["status"] == "error" and "prevents you" in denied["state"]["error"]
    assert allowed["state"]["status"] == "completed"
    assert not PermissionRequest.objects.filter(session=session).exists()


def test_the_plan_agent_is_refused_an_edit_outside_plans_but_may_write_a_plan(
    alice, script, make_session, worker
):
    script_id = script.load(
        [
            [
                {
                    "tool_calls": [
                        {
                            "name": "write",
                            "id": "c1",
                            "arguments": {"filePath": "/workspace/src.py", "content": "x = 1\n"},
                        }
                    ]
                }
            ],
            [
                {
                    "tool_calls": [
                        {
                            "name": "write",
                            "id": "c2",
                            "arguments": {
                                "filePath": "/workspace/.opencode/plans/plan.md",
                                "content": "# Plan\n",
                            },
                        }
                    ]
                }
            ],
            [{"text": "plan written"}],
        ]
    )
    session = make_session(alice, script_id, agent="plan")
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("plan it"), agent="plan")
    session = wait_idle(session)
    refused, allowed = tool_parts(session)
    assert refused["state"]["status"] == "error" and "prevents you" in refused["state"]["error"]
    assert allowed["state"]["status"] == "completed"
    first = next(r for r in script.requests(script_id) if r.get("stream"))
    assert "Plan mode is active" in first["messages"][-1]["content"]


def test_three_identical_calls_in_a_row_ask_doom_loop(alice, script, make_session, worker):
    script_id = script.load(
        [[bash(f"c{i}", "echo same")] for i in range(1, 4)] + [[{"text": "stopped looping"}]]
    )
    session = make_session(alice, script_id)
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("loop"))

    request = pending_request(session)
    assert (request.permission, request.patterns, request.call_id) == ("doom_loop", ["bash"], "c3")
    parked(session)
    permission_reply(actor=alice.actor, request=request, reply="once")
    session = wait_idle(session)
    assert [p["state"]["status"] for p in tool_parts(session)] == ["completed"] * 3


def test_a_tenant_cannot_reply_to_another_orgs_permission_request(
    alice, charlie, script, make_session, worker
):
    from hangar.errors import NotFound

    ask_for_bash(alice.project)
    session = make_session(alice, script.load([[bash("c1", "echo hi")], [{"text": "ok"}]]))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("run"))
    request = pending_request(session)
    with pytest.raises(NotFound):
        permission_reply(actor=charlie.actor, request=request, reply="once")
    assert PermissionRequest.objects.get(pk=request.pk).status == "pending"
