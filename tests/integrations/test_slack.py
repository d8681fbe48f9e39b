"""The Slack app, end to end: the real slack-bolt app behind Hangar's endpoint, requests signed with
Slack's real signing scheme, Slack's Web API played by a local server (slack-sdk's base_url), sessions
run by a real worker against the scripted LLM."""

import json
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from slack_sdk.signature import SignatureVerifier

from hangar.audit.models import AuditEvent
from hangar.conversations.models import Message, PermissionRequest, QuestionRequest, Session
from hangar.integrations.slack.models import SlackChannel, SlackInstall, SlackThread, SlackUserLink
from hangar.projects import crypto
from hangar.projects.models import Project
from tests.engine.conftest import give_scripted_credential, wait_for, wait_idle
from tests.integrations.slack_fake import BOT_TOKEN, BOT_USER, TEAM, FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0ROCKET"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def slack(settings):
    fake = FakeSlack()
    settings.SLACK_SIGNING_SECRET = SECRET
    settings.SLACK_API_URL = fake.url
    settings.SLACK_CLIENT_ID = "123.456"
    settings.SLACK_CLIENT_SECRET = "client-secret"
    settings.SLACK_AUTHORIZE_URL = "https://slack.example/oauth/v2/authorize"
    yield fake
    fake.stop()


@pytest.fixture
def slack_worker(start_worker, slack):
    return start_worker(env={"SLACK_API_URL": slack.url})


@pytest.fixture
def installed(alice, slack):
    install = SlackInstall.objects.create(
        org=alice.org,
        team_id=TEAM["id"],
        team_name=TEAM["name"],
        bot_user_id=BOT_USER,
        bot_token_encrypted=crypto.encrypt(BOT_TOKEN),
    )
    SlackUserLink.objects.create(install=install, slack_user_id="UALICE", user=alice.user)
    return install


def signed_post(body: str, content_type: str, at: float | None = None, secret: str = SECRET):
    stamp = str(int(at if at is not None else time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    return Client().post(
        "/hooks/slack/events",
        body,
        content_type=content_type,
        HTTP_X_SLACK_REQUEST_TIMESTAMP=stamp,
        HTTP_X_SLACK_SIGNATURE=signature,
    )


def event_body(event: dict) -> str:
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM["id"],
            "api_app_id": "A0HANGAR",
            "type": "event_callback",
            "event_id": f"Ev{time.monotonic_ns()}",
            "event_time": int(time.time()),
            "event": event,
        }
    )


def mention(text: str, user: str = "UALICE", ts: str = "1700000000.000100", thread_ts: str | None = None):
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER}> {text}",
        "ts": ts,
        "channel": CHANNEL,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    response = signed_post(event_body(event), "application/json")
    assert response.status_code == 200, response.content
    return response


def reply_in_thread(text: str, thread_ts: str, user: str = "UALICE", ts: str = "1700000001.000200"):
    event = {
        "type": "message",
        "channel_type": "channel",
        "user": user,
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
        "channel": CHANNEL,
    }
    response = signed_post(event_body(event), "application/json")
    assert response.status_code == 200, response.content


def press(action: str, request_id: str, user: str, channel: str = CHANNEL, message_ts: str = ""):
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM["id"]},
        "user": {"id": user},
        "api_app_id": "A0HANGAR",
        "channel": {"id": channel},
        "trigger_id": "t1",
        "container": {"type": "message", **({"message_ts": message_ts} if message_ts else {})},
        "actions": [
            {
                "type": "button",
                "action_id": action,
                "value": request_id,
                "block_id": f"perm:{request_id}",
                "action_ts": str(time.time()),
            }
        ],
    }
    response = signed_post(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")
    assert response.status_code == 200, response.content


def scripted_project(persona, scripted, script_id: str, rules: list | None = None) -> None:
    give_scripted_credential(persona.org, scripted)
    Project.objects.filter(pk=persona.project.pk).update(
        default_model=f"scripted/{script_id}", permission_rules=rules or []
    )


def bash(call_id: str, command: str) -> dict:
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": "run"}}
        ]
    }


def test_an_org_admin_installs_the_app_through_oauth_v2_and_the_bot_token_is_stored_encrypted(
    alice, bob, slack
):
    browser = Client()
    browser.force_login(alice.user)
    start = browser.get("/hooks/slack/install?org=acme")
    assert start.status_code == 302 and start["Location"].startswith(
        "https://slack.example/oauth/v2/authorize?"
    )
    query = parse_qs(urlsplit(start["Location"]).query)
    assert query["client_id"] == ["123.456"] and "chat:write" in query["scope"][0]

    done = browser.get("/hooks/slack/oauth", {"code": "good-code", "state": query["state"][0]})

    assert done.status_code == 200, done.content
    install = SlackInstall.objects.get()
    assert (
        install.org_id == alice.org.pk and install.team_id == TEAM["id"] and install.bot_user_id == BOT_USER
    )
    assert (
        BOT_TOKEN not in install.bot_token_encrypted
        and crypto.decrypt(install.bot_token_encrypted) == BOT_TOKEN
    )
    [exchange] = slack.of("oauth.v2.access")
    assert exchange["code"] == "good-code"
    assert AuditEvent.objects.filter(action="slack.install", target_id=str(install.pk)).exists()
    # A forged state, and a member who is not an admin, install nothing.
    assert Client().get("/hooks/slack/oauth", {"code": "good-code", "state": "forged"}).status_code == 400
    member = Client()
    member.force_login(bob.user)
    assert member.get("/hooks/slack/install?org=acme").status_code == 403


def test_a_mention_starts_a_session_whose_status_is_edited_in_place_and_ends_with_a_summary(
    alice, installed, slack, slack_worker, script, scripted
):
    script_id = script.load(
        [[bash("c1", "echo one")], [bash("c2", "echo two")], [{"text": "Both commands ran fine."}]]
    )
    scripted_project(alice, scripted, script_id)

    mention("run the two checks agent=plan")

    thread = SlackThread.objects.get()
    assert (thread.install_id, thread.channel_id, thread.thread_ts) == (
        installed.pk,
        CHANNEL,
        "1700000000.000100",
    )
    session = thread.session
    assert session.agent == "plan" and session.creator_id == alice.user.pk
    wait_idle(session)
    summary = wait_for(
        lambda: [m for m in slack.of("chat.postMessage") if m["text"].startswith("<@UALICE>")],
        what="the summary",
    )[0]
    assert "Both commands ran fine." in summary["text"] and summary["thread_ts"] == thread.thread_ts
    statuses = [m for m in slack.of("chat.postMessage") if not m["text"].startswith("<@UALICE>")]
    assert len(statuses) == 1  # one status message for the run...
    status_ts = SlackThread.objects.get().status_ts
    updates = slack.of("chat.update")
    assert updates and all(u["ts"] == status_ts for u in updates)  # ...edited in place
    assert updates[-1]["text"].startswith("Done") and f"/sessions/{session.pk}" in updates[-1]["text"]
    assert len(updates) <= 4  # throttled: 2 tools x 2 state changes each would be more


def test_a_reply_in_the_thread_is_a_follow_up_prompt_to_the_same_session(
    alice, installed, slack, slack_worker, script, scripted
):
    script_id = script.load([[{"text": "first answer"}], [{"text": "second answer"}]])
    scripted_project(alice, scripted, script_id)
    mention("hello")
    session = SlackThread.objects.get().session
    wait_idle(session)

    reply_in_thread("and now the follow-up", thread_ts="1700000000.000100")

    assert Session.objects.count() == 1
    wait_for(
        lambda: any("second answer" in m["text"] for m in slack.of("chat.postMessage")), what="2nd summary"
    )
    users = [m.data for m in Message.objects.filter(session=session, role="user").order_by("id")]
    assert len(users) == 2
    # One status message per run: two runs, two status messages.
    assert len([m for m in slack.of("chat.postMessage") if not m["text"].startswith("<@UALICE>")]) == 2


def test_a_permission_is_approved_by_a_button_and_refused_for_a_user_who_may_not_answer(
    alice, dave, installed, slack, slack_worker, script, scripted
):
    SlackUserLink.objects.create(install=installed, slack_user_id="UDAVE", user=dave.user)  # a viewer
    script_id = script.load([[bash("c1", "echo approved")], [{"text": "it ran"}]])
    scripted_project(
        alice, scripted, script_id, rules=[{"permission": "bash", "pattern": "*", "action": "ask"}]
    )
    mention("run it")
    session = SlackThread.objects.get().session
    request = wait_for(lambda: PermissionRequest.objects.filter(session=session).first(), what="the ask")
    buttons = wait_for(lambda: [m for m in slack.of("chat.postMessage") if m.get("blocks")], what="buttons")[
        0
    ]
    actions = next(b for b in buttons["blocks"] if b["type"] == "actions")["elements"]
    assert [a["action_id"] for a in actions] == ["perm_once", "perm_always", "perm_reject"]

    press("perm_once", request.pk, user="UDAVE")

    request.refresh_from_db()
    assert request.status == "pending"
    assert any("may not answer" in e["text"] for e in slack.of("chat.postEphemeral"))

    press("perm_once", request.pk, user="UALICE")

    request.refresh_from_db()
    assert request.status == "once"
    audit = AuditEvent.objects.get(action="permission.reply")
    assert audit.actor_label == "alice@acme.test via slack" and audit.request_id.startswith("slack:")
    assert any(u["text"].startswith("Allowed once by <@UALICE>") for u in slack.of("chat.update"))
    wait_idle(session)
    wait_for(lambda: any("it ran" in m["text"] for m in slack.of("chat.postMessage")), what="the summary")


def test_an_unlinked_user_is_told_how_to_link_and_nothing_runs_until_they_link(bob, installed, slack):
    mention("delete everything", user="UBOB")

    assert not Session.objects.exists() and not SlackThread.objects.exists()
    [told] = slack.of("chat.postEphemeral")
    assert told["user"] == "UBOB" and "/hooks/slack/link?t=" in told["text"]
    link = urlsplit(told["text"].split("<", 1)[1].split("|", 1)[0])
    path = f"{link.path}?{link.query}"

    anonymous = Client().get(path)
    assert anonymous.status_code == 302  # sign in first
    browser = Client()
    browser.force_login(bob.user)
    assert browser.get(path).status_code == 200
    assert browser.post(path).status_code == 200
    assert SlackUserLink.objects.get(slack_user_id="UBOB").user == bob.user
    # A tampered link links nothing.
    assert browser.post(path[:-3] + "xyz").status_code == 404

    mention("now it runs model=p/m", user="UBOB", ts="1700000005.000100")
    assert Session.objects.get().creator_id == bob.user.pk


def test_stop_in_the_thread_aborts_the_run(alice, installed, slack, slack_worker, script, scripted):
    script_id = script.load([[bash("c1", "sleep 30")], [{"text": "never"}]])
    scripted_project(alice, scripted, script_id)
    mention("wait a long time")
    session = SlackThread.objects.get().session
    wait_for(lambda: session.parts.filter(type="tool").exists(), what="the tool to start")

    reply_in_thread("stop", thread_ts="1700000000.000100")

    started = time.monotonic()
    wait_idle(session, timeout=25)
    assert time.monotonic() - started < 20
    assert AuditEvent.objects.filter(action="session.abort", target_id=session.pk).exists()
    assert Message.objects.filter(session=session, role="user").count() == 1  # "stop" is not a prompt


def test_slash_command_starts_a_session_and_binds_a_channel(alice, installed, slack):
    Project.objects.create(org=alice.org, slug="probe", name="probe")
    form = {
        "team_id": TEAM["id"],
        "channel_id": CHANNEL,
        "user_id": "UALICE",
        "command": "/hangar",
        "response_url": "https://hooks.slack.example/x",
        "trigger_id": "t",
    }

    bound = signed_post(
        urlencode({**form, "text": "bind project=probe"}), "application/x-www-form-urlencoded"
    )
    assert bound.status_code == 200
    started = signed_post(
        urlencode({**form, "text": "fix the flaky test model=p/m"}), "application/x-www-form-urlencoded"
    )
    assert started.status_code == 200

    thread = SlackThread.objects.get()
    assert thread.session.project.slug == "probe" and thread.session.model == {
        "providerID": "p",
        "modelID": "m",
    }
    assert any("<@UALICE> asked: fix the flaky test" in m["text"] for m in slack.of("chat.postMessage"))
    assert thread.thread_ts.startswith("1800000000.")  # the anchor message's ts, as the fake Slack gave it
    assert SlackChannel.objects.get(channel_id=CHANNEL).project.slug == "probe"


def test_a_forged_and_a_replayed_request_are_refused(alice, installed, slack):
    body = event_body(
        {
            "type": "app_mention",
            "user": "UALICE",
            "text": f"<@{BOT_USER}> hi model=p/m",
            "ts": "1.1",
            "channel": CHANNEL,
        }
    )

    assert signed_post(body, "application/json", secret="not-the-secret").status_code == 401
    assert signed_post(body, "application/json", at=time.time() - 360).status_code == 401  # stale: > 5 min

    stamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=body)
    headers = {"HTTP_X_SLACK_REQUEST_TIMESTAMP": stamp, "HTTP_X_SLACK_SIGNATURE": signature}
    first = Client().post("/hooks/slack/events", body, content_type="application/json", **headers)
    again = Client().post("/hooks/slack/events", body, content_type="application/json", **headers)

    assert first.status_code == 200 and again.status_code == 401
    assert Session.objects.count() == 1


def test_the_agents_question_is_answered_by_a_button_and_the_run_goes_on(
    alice, dave, installed, slack, slack_worker, script, scripted
):
    SlackUserLink.objects.create(install=installed, slack_user_id="UDAVE", user=dave.user)  # a viewer
    ask = {
        "questions": [
            {
                "question": "Which region?",
                "header": "Region",
                "options": [{"label": "eu-west", "description": ""}, {"label": "us-east", "description": ""}],
            }
        ]
    }
    script_id = script.load(
        [
            [{"tool_calls": [{"name": "question", "id": "q1", "arguments": ask}]}],
            [{"text": "deploying to us-east"}],
        ]
    )
    scripted_project(alice, scripted, script_id)
    mention("deploy it")
    session = SlackThread.objects.get().session
    request = wait_for(lambda: QuestionRequest.objects.filter(session=session).first(), what="the question")
    posted = wait_for(lambda: [m for m in slack.of("chat.postMessage") if m.get("blocks")], what="buttons")[0]
    actions = next(b for b in posted["blocks"] if b["type"] == "actions")["elements"]
    assert [(a["action_id"], a["text"]["text"]) for a in actions] == [
        ("question_answer_0", "eu-west"),
        ("question_answer_1", "us-east"),
        ("question_reject", "Dismiss"),
    ]

    press("question_answer_1", request.pk, user="UDAVE")
    request.refresh_from_db()
    assert request.status == "pending"

    press("question_answer_1", request.pk, user="UALICE")
    request.refresh_from_db()
    assert request.status == "answered" and request.answers == [["us-east"]]
    audit = AuditEvent.objects.get(action="question.answered")
    assert audit.actor_label == "alice@acme.test via slack"
    assert any(u["text"].startswith("Answered “us-east” by <@UALICE>") for u in slack.of("chat.update"))
    wait_idle(session)
    wait_for(
        lambda: any("deploying to us-east" in m["text"] for m in slack.of("chat.postMessage")),
        what="the summary",
    )


@pytest.mark.parametrize(
    "event",
    [
        {"type": "app_uninstalled"},
        {"type": "tokens_revoked", "tokens": {"oauth": ["UALICE"], "bot": [BOT_USER]}},
    ],
    ids=["app_uninstalled", "bot_token_revoked"],
)
def test_an_uninstall_or_a_revoked_bot_token_removes_the_install_and_nothing_starts_after(
    alice, installed, slack, event
):
    response = signed_post(event_body(event), "application/json")
    assert response.status_code == 200, response.content
    assert not SlackInstall.objects.filter(pk=installed.pk).exists()
    assert not SlackUserLink.objects.filter(install_id=installed.pk).exists()
    row = AuditEvent.objects.get(action="slack.uninstall")
    assert row.org_id == alice.org.pk and row.data == {"team": TEAM["id"], "reason": event["type"]}
    assert row.actor_type == "system"
    # The workspace is unknown now: a mention is refused by Bolt's authorization and nothing is made.
    before = Session.objects.count()
    refused = signed_post(
        event_body(
            {
                "type": "app_mention",
                "user": "UALICE",
                "text": f"<@{BOT_USER}> hi",
                "ts": "1700000009.000100",
                "channel": CHANNEL,
            }
        ),
        "application/json",
    )
    assert refused.status_code == 200 and b"no longer available" in refused.content  # Bolt's own answer
    assert Session.objects.count() == before


def test_a_revoked_user_token_leaves_the_install(alice, installed, slack):
    event = {"type": "tokens_revoked", "tokens": {"oauth": ["UALICE"], "bot": []}}
    assert signed_post(event_body(event), "application/json").status_code == 200
    assert SlackInstall.objects.filter(pk=installed.pk).exists()
    assert not AuditEvent.objects.filter(action="slack.uninstall").exists()


def test_a_direct_message_starts_a_session_in_the_dm_and_answers_there(
    alice, installed, slack, slack_worker, script, scripted
):
    script_id = script.load([[{"text": "Answered in your DM."}]])
    scripted_project(alice, scripted, script_id)
    installed.default_project = alice.project
    installed.save()
    event = {
        "type": "message",
        "channel_type": "im",
        "user": "UALICE",
        "text": "what changed yesterday?",
        "ts": "1700000100.000100",
        "channel": "D0ALICE",
    }
    assert signed_post(event_body(event), "application/json").status_code == 200

    thread = SlackThread.objects.get()
    assert (thread.channel_id, thread.thread_ts) == ("D0ALICE", "1700000100.000100")
    assert thread.session.project_id == alice.project.pk and thread.session.creator_id == alice.user.pk
    wait_idle(thread.session)
    summary = wait_for(
        lambda: [m for m in slack.of("chat.postMessage") if "Answered in your DM." in m["text"]],
        what="answer",
    )[0]
    assert summary["channel"] == "D0ALICE" and summary["thread_ts"] == "1700000100.000100"
    # The bot's own message in the DM (a subtype / bot_id) starts nothing.
    bot_echo = {**event, "ts": "1700000101.000100", "bot_id": "B0HANGAR", "text": "Answered in your DM."}
    assert signed_post(event_body(bot_echo), "application/json").status_code == 200
    assert Session.objects.count() == 1
