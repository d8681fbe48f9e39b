# ruff: noqa: F811  (pytest fixtures imported from test_slack are parameters here)
"""The headless ask policy end to end: runs started by a signed webhook call and by a Slack mention, run by
a real worker in a Docker sandbox against the scripted model over HTTP, with Slack's Web API played by the
local wire server. For each trigger: `reject` (the reason reaches the model, which goes on), `route` (the
approver is DMed with buttons and sees it in the web app's notice; no one answers; it expires into a
reject that is audited, and the run ends cleanly) and `allow_listed` (what the admin's rules allow runs,
the rest is refused)."""

import pytest

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Role, User
from hangar.audit.models import ActorType, AuditEvent
from hangar.conversations.models import PermissionRequest, Session
from hangar.engine.reply_services import permission_reply
from hangar.integrations.slack.models import SlackThread, SlackUserLink
from hangar.projects.models import Project
from tests.engine.conftest import tool_parts, wait_for, wait_idle
from tests.integrations.test_slack import (  # noqa: F401  (fixtures)
    bash,
    installed,
    mention,
    press,
    scripted_project,
    slack,
)
from tests.integrations.test_webhooks_inbound import BODY, call, create_trigger

pytestmark = pytest.mark.django_db(transaction=True)

LISTED = [{"permission": "bash", "pattern": "echo *", "action": "allow"}]
REASON = "Unattended CI runs may not run commands; report what you would run instead."


def set_policy(persona, policy: dict) -> None:
    Project.objects.filter(pk=persona.project.pk).update(headless_policy=policy)


def webhook_run(api, alice, script, scripted_credential, steps) -> tuple[Session, str]:
    scripted_credential(alice)
    script_id = script.load(steps)
    trigger = create_trigger(api, alice, model=f"scripted/{script_id}")
    response, _ = call(trigger, BODY)
    assert response.status_code == 202, response.content
    return Session.objects.get(pk=response.json()["session"]), script_id


def tool_result(script, script_id: str, step: int) -> str:
    """What the model was told of its calls, in its `step`-th streamed request."""
    request = [r for r in script.requests(script_id) if r.get("stream")][step]
    return "\n".join(m["content"] for m in request["messages"] if m["role"] == "tool")


@pytest.fixture
def hq_worker(start_worker, slack):
    return start_worker(env={"SLACK_API_URL": slack.url})


def test_a_webhook_run_under_reject_feeds_the_reason_back_and_finishes(
    alice, api, script, scripted_credential, hq_worker
):
    set_policy(alice, {"webhook": {"mode": "reject", "reason": REASON}})
    steps = [[bash("c1", "echo from-ci")], [{"text": "I could not run it; here is the plan."}]]
    session, script_id = webhook_run(api, alice, script, scripted_credential, steps)
    session = wait_idle(session)
    (part,) = tool_parts(session)
    assert part["state"]["status"] == "error" and REASON in part["state"]["error"]
    assert REASON in tool_result(script, script_id, 1)
    assert not PermissionRequest.objects.filter(session=session).exists()
    audit = AuditEvent.objects.get(action="permission.auto_rejected")
    assert audit.data["trigger"] == "webhook" and audit.data["mode"] == "reject"
    assert audit.data["session"] == session.pk and audit.data["patterns"] == ["echo from-ci"]


def test_a_webhook_run_under_allow_listed_runs_what_the_rules_allow_and_refuses_the_rest(
    alice, api, script, scripted_credential, hq_worker
):
    set_policy(alice, {"webhook": {"mode": "allow_listed", "rules": LISTED}})
    steps = [[bash("c1", "echo listed-ok")], [bash("c2", "touch not-listed")], [{"text": "done"}]]
    session, _ = webhook_run(api, alice, script, scripted_credential, steps)
    session = wait_idle(session)
    listed, refused = tool_parts(session)
    assert listed["state"]["status"] == "completed" and "listed-ok" in listed["state"]["output"]
    assert refused["state"]["status"] == "error" and "No one is watching" in refused["state"]["error"]
    assert [a.data["patterns"] for a in AuditEvent.objects.filter(action="permission.auto_approved")] == [
        ["echo listed-ok"]
    ]
    assert [a.data["patterns"] for a in AuditEvent.objects.filter(action="permission.auto_rejected")] == [
        ["touch not-listed"]
    ]
    assert not PermissionRequest.objects.filter(session=session).exists()


def test_a_webhook_run_routed_to_an_approver_is_dmed_shown_to_them_and_expires_into_a_reject(
    alice,
    bob,
    charlie,
    api,
    script,
    scripted_credential,
    slack,
    installed,
    hq_worker,
):
    SlackUserLink.objects.create(install=installed, slack_user_id="UBOB", user=bob.user)
    carol = User.objects.create_user("carol@acme.test", password="pw")
    Membership.objects.create(org=alice.org, user=carol, role=Role.MEMBER)
    set_policy(alice, {"webhook": {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 6}})
    steps = [[bash("c1", "echo needs-approval")], [{"text": "Stopped: no approval."}]]
    session, script_id = webhook_run(api, alice, script, scripted_credential, steps)

    request = wait_for(
        lambda: PermissionRequest.objects.filter(session=session, status="pending").first(), what="the ask"
    )
    assert request.approvers == [bob.user.pk] and request.expires_at is not None
    # The approver hears of it by Slack DM, with the buttons.
    dm = wait_for(lambda: [m for m in slack.of("chat.postMessage") if m.get("channel") == "UBOB"], what="DM")
    actions = next(b for b in dm[0]["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == ["perm_once", "perm_always", "perm_reject"]
    assert actions[0]["value"] == request.pk
    # ... and in the web app's notice, marked as theirs, with its expiry; another org sees nothing.
    notice = api(bob).get("/api/orgs/acme/pending/").json()["permissions"]
    assert [(p["id"], p["forYou"], p["approvers"]) for p in notice] == [(request.pk, True, [bob.user.pk])]
    assert notice[0]["expiresAt"] == int(request.expires_at.timestamp() * 1000)
    assert api(alice).get("/api/orgs/acme/pending/").json()["permissions"][0]["forYou"] is False
    assert api(charlie).get("/api/orgs/acme/pending/").status_code == 404
    # A member who is not an approver may not answer it.
    from tests.conftest import Persona  # noqa: F401  (the actor shape)

    carol_actor = Actor(type=ActorType.USER, org_id=alice.org.pk, user=carol, label=carol.email)
    with pytest.raises(Exception, match="admin"):
        permission_reply(actor=carol_actor, request=request, reply="once")

    # No one answers: it expires into a reject, audited, and the run ends cleanly.
    session = wait_idle(session, timeout=90)
    request.refresh_from_db()
    assert request.status == "reject" and "expired" in request.reply_message
    (part,) = tool_parts(session)
    assert part["state"]["status"] == "error" and "expired" in part["state"]["error"]
    assert "expired" in tool_result(script, script_id, 1)
    expired = AuditEvent.objects.get(action="permission.expired")
    assert expired.data["session"] == session.pk and expired.data["approvers"] == [bob.user.pk]
    assert expired.actor_label == "agent"
    assert Session.objects.get(pk=session.pk).status == "idle"


def test_a_slack_run_under_reject_tells_the_model_why_and_posts_no_buttons(
    alice,
    installed,
    slack,
    hq_worker,
    script,
    scripted,
):
    script_id = script.load([[bash("c1", "echo hi")], [{"text": "could not run it"}]])
    scripted_project(
        alice, scripted, script_id, rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )
    set_policy(alice, {"slack": {"mode": "reject", "reason": REASON}})
    mention("say hi")
    session = wait_idle(SlackThread.objects.get().session)
    (part,) = tool_parts(session)
    assert part["state"]["status"] == "error" and REASON in part["state"]["error"]
    assert REASON in tool_result(script, script_id, 1)
    assert AuditEvent.objects.get(action="permission.auto_rejected").data["trigger"] == "slack"
    assert not PermissionRequest.objects.filter(session=session).exists()
    wait_for(
        lambda: any("could not run it" in m["text"] for m in slack.of("chat.postMessage")), what="summary"
    )
    assert not [m for m in slack.of("chat.postMessage") if m.get("blocks")]


def test_a_slack_run_under_allow_listed(
    alice,
    installed,
    slack,
    hq_worker,
    script,
    scripted,
):
    steps = [[bash("c1", "echo one")], [bash("c2", "rm -rf build")], [{"text": "finished"}]]
    script_id = script.load(steps)
    scripted_project(
        alice, scripted, script_id, rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )
    set_policy(alice, {"slack": {"mode": "allow_listed", "rules": LISTED, "reason": REASON}})
    mention("tidy up")
    session = wait_idle(SlackThread.objects.get().session)
    listed, refused = tool_parts(session)
    assert listed["state"]["status"] == "completed" and "one" in listed["state"]["output"]
    assert refused["state"]["status"] == "error" and REASON in refused["state"]["error"]
    rejected = AuditEvent.objects.get(action="permission.auto_rejected")
    assert rejected.data["trigger"] == "slack" and rejected.data["patterns"] == ["rm -rf build"]
    # No buttons were posted: nothing waited for anyone.
    assert not [m for m in slack.of("chat.postMessage") if m.get("blocks")]
    wait_for(lambda: any("finished" in m["text"] for m in slack.of("chat.postMessage")), what="the summary")


def test_a_slack_run_routed_to_an_approver_is_dmed_and_expires_into_a_reject(
    alice,
    bob,
    installed,
    slack,
    hq_worker,
    script,
    scripted,
):
    SlackUserLink.objects.create(install=installed, slack_user_id="UBOB", user=bob.user)
    script_id = script.load([[bash("c1", "echo deploy")], [{"text": "gave up waiting"}]])
    scripted_project(
        alice, scripted, script_id, rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )
    set_policy(alice, {"slack": {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 5}})
    mention("deploy it")
    session = SlackThread.objects.get().session
    request = wait_for(lambda: PermissionRequest.objects.filter(session=session).first(), what="the ask")
    dm = wait_for(lambda: [m for m in slack.of("chat.postMessage") if m.get("channel") == "UBOB"], what="DM")
    assert any(b["type"] == "actions" for b in dm[0]["blocks"])
    session = wait_idle(session, timeout=90)
    request.refresh_from_db()
    assert request.status == "reject"
    assert AuditEvent.objects.filter(action="permission.expired", target_id=request.pk).exists()
    assert "expired" in tool_parts(session)[0]["state"]["error"]
    wait_for(
        lambda: any("gave up waiting" in m["text"] for m in slack.of("chat.postMessage")), what="summary"
    )


def test_a_routed_ask_is_approved_from_the_approvers_dm_and_the_run_goes_on(
    alice,
    bob,
    api,
    script,
    scripted_credential,
    slack,
    installed,
    hq_worker,
):
    SlackUserLink.objects.create(install=installed, slack_user_id="UBOB", user=bob.user)
    set_policy(alice, {"webhook": {"mode": "route", "approvers": [bob.user.pk], "expire_after_s": 600}})
    steps = [[bash("c1", "echo approved-by-bob")], [{"text": "done"}]]
    session, _ = webhook_run(api, alice, script, scripted_credential, steps)
    request = wait_for(lambda: PermissionRequest.objects.filter(session=session).first(), what="the ask")
    dm = wait_for(lambda: [m for m in slack.of("chat.postMessage") if m.get("channel") == "UBOB"], what="DM")
    assert any(b["type"] == "actions" for b in dm[0]["blocks"])
    press("perm_once", request.pk, user="UBOB", channel="DBOB", message_ts="1800000000.000777")

    request.refresh_from_db()
    assert request.status == "once"
    assert any(
        u["ts"] == "1800000000.000777" and u["text"].startswith("Allowed once by <@UBOB>")
        for u in slack.of("chat.update")
    )
    (part,) = tool_parts(wait_idle(session))
    assert part["state"]["status"] == "completed" and "approved-by-bob" in part["state"]["output"]
