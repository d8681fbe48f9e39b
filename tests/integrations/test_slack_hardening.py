"""Low items of the Slack app: the OAuth install's `state` is good only in the browser that started it (a
cookie), the link page says which Slack identity is about to act as the member, and text from the model
reaches Slack escaped (Slack's `&`, `<`, `>`), so an answer cannot ping `<!channel>`, mention `<@U…>` or
dress a link. Slack's Web API is the local server tests/integrations/slack_fake.py; sessions run in a real
worker against the scripted LLM."""

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from hangar.conversations.models import PermissionRequest, QuestionRequest
from hangar.integrations.slack import tasks, texts
from hangar.integrations.slack.models import SlackInstall, SlackThread
from tests.engine.conftest import wait_for, wait_idle
from tests.integrations import test_slack as base
from tests.integrations.test_slack import mention, scripted_project

# The Slack app's fixtures: the fake Web API, an install of acme with alice linked, a worker.
slack, installed, slack_worker = base.slack, base.installed, base.slack_worker

pytestmark = pytest.mark.django_db(transaction=True)

HOSTILE = "<!channel> wake up <@U0BOSS> & see <https://evil.example|your invoice>"


def test_an_install_state_is_good_only_in_the_browser_that_started_it(alice, slack):
    browser = Client()
    browser.force_login(alice.user)
    start = browser.get("/hooks/slack/install?org=acme")
    state = parse_qs(urlsplit(start["Location"]).query)["state"][0]
    # Someone else's browser, handed alice's state (a link in a mail, a forged redirect), installs nothing.
    elsewhere = Client()
    assert elsewhere.get("/hooks/slack/oauth", {"code": "good-code", "state": state}).status_code == 400
    assert not SlackInstall.objects.exists()
    done = browser.get("/hooks/slack/oauth", {"code": "good-code", "state": state})
    assert done.status_code == 200, done.content
    assert SlackInstall.objects.get().org_id == alice.org.pk


def test_the_link_page_names_the_slack_identity_being_linked(bob, installed, slack):
    mention("hello", user="UBOB")
    [told] = slack.of("chat.postEphemeral")
    link = urlsplit(told["text"].split("<", 1)[1].split("|", 1)[0])
    browser = Client()
    browser.force_login(bob.user)
    page = browser.get(f"{link.path}?{link.query}").content.decode()
    assert "UBOB" in page and "Acme Slack" in page and "bob@acme.test" in page
    # A link that does not verify shows no form to confirm.
    assert browser.get(f"{link.path}?t=forged").status_code == 404


def test_the_models_answer_reaches_slack_escaped(alice, installed, slack, slack_worker, script, scripted):
    scripted_project(alice, scripted, script.load([[{"text": HOSTILE}]]))
    mention("summarise")
    wait_idle(SlackThread.objects.get().session)
    summary = wait_for(
        lambda: [m for m in slack.of("chat.postMessage") if m["text"].startswith("<@UALICE>")],
        what="the summary",
    )[0]["text"]
    assert (
        "&lt;!channel&gt; wake up &lt;@U0BOSS&gt; &amp; see &lt;https://evil.example|your invoice&gt;"
        in summary
    )
    assert "<!channel>" not in summary and "<@U0BOSS>" not in summary and "<https://evil" not in summary


def test_questions_and_permissions_reach_slack_escaped(alice):
    question = QuestionRequest(
        id="q1",
        questions=[{"header": "<!here>", "question": HOSTILE, "options": [{"label": "a"}], "multiple": True}],
    )
    section = tasks.question_blocks(question, "https://hangar.example/s/1")[0]["text"]["text"]
    assert "&lt;!here&gt;" in section and "&lt;!channel&gt;" in section and "<!channel>" not in section
    assert "<https://hangar.example/s/1|Answer in Hangar>" in section  # Hangar's own link stays a link
    permission = PermissionRequest(id="p1", permission="bash", patterns=["echo <!channel> && <@U0BOSS>"])
    text = tasks.permission_blocks(permission)[0]["text"]["text"]
    assert "&lt;!channel&gt; &amp;&amp; &lt;@U0BOSS&gt;" in text and "<!channel>" not in text
    assert texts.escape("a <b> & c") == "a &lt;b&gt; &amp; c"
