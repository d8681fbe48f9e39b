"""The main flow in a real browser: sign in, create a project, start a session, watch the answer stream
and tool cards move pending -> running -> completed, and reload mid-stream without duplicates."""

import pytest

from hangar.conversations.models import Message, Session
from hangar.projects.models import ProviderCredential

pytestmark = pytest.mark.django_db(transaction=True)

# Records, inside the page, every state each tool card shows and each version of the answer's text, so
# the test sees transitions however quickly they pass.
RECORDER = """
window.__seen = {tools: {}, texts: [], banner: 0};
new MutationObserver(() => {
  for (const el of document.querySelectorAll('[data-call-id]')) {
    const list = (window.__seen.tools[el.dataset.callId] ||= []);
    if (list[list.length - 1] !== el.dataset.state) list.push(el.dataset.state);
  }
  const text = [...document.querySelectorAll('article.msg.assistant .md')].map(e => e.textContent).join('|');
  const texts = window.__seen.texts;
  if (texts[texts.length - 1] !== text) texts.push(text);
  if (document.querySelector('[data-testid=reconnecting]')) window.__seen.banner += 1;
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""


def new_session(page, persona, model: str, made: list[str]) -> str:
    """A new session of the persona's project (whose default model is `model`), opened in the page."""
    persona.project.default_model = model
    persona.project.save()
    page.goto(f"/o/acme/p/{persona.project.pk}")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url("**/s/ses_*")
    made.append(page.url.rsplit("/s/", 1)[1])
    return made[-1]


def test_a_new_user_signs_in_creates_a_project_and_watches_a_session_work(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    scripted_credential(alice)
    script_id = script.load(
        [
            [
                # The engine sends a coalesced delta when the next one arrives, so each pause follows a
                # second chunk: what came before it is on screen during the pause.
                {"text": "Let me look. "},
                {"pause": 0.2},
                {"text": "Still looking. "},
                {"pause": 0.8},
                {"text": "Running two commands."},
                {
                    "tool_calls": [
                        {
                            "name": "bash",
                            "id": "c1",
                            "arguments": {"command": "sleep 1; echo one", "description": "first"},
                        },
                        {
                            "name": "bash",
                            "id": "c2",
                            "arguments": {"command": "sleep 1; echo two", "description": "second"},
                        },
                    ]
                },
            ],
            [{"text": "Both ran: **one** and `two`.\n\n```python\nprint('hi')\n```"}],
        ],
        title="Two commands",
    )
    app = open_app()
    page = app.page
    page.add_init_script(RECORDER)
    page.goto("/")
    page.wait_for_url("**/login")
    app.shot("login")
    app.sign_in(alice)
    page.get_by_role("heading", name="Projects").wait_for()
    app.shot("projects")

    page.get_by_role("button", name="New project").click()
    page.get_by_label("Name").fill("Web demo")
    page.get_by_label("Default model").fill(f"scripted/{script_id}")
    page.get_by_role("button", name="Create project").click()
    page.get_by_text("No sessions yet.").wait_for()
    app.shot("project-empty")

    page.get_by_role("button", name="New session").click()
    page.wait_for_url("**/s/ses_*")
    session_id = page.url.rsplit("/s/", 1)[1]
    sessions_made.append(session_id)
    page.get_by_role("textbox", name="Message").fill("run two commands")
    page.get_by_role("textbox", name="Message").press("Enter")

    final = page.locator("article.msg.assistant .md strong", has_text="one")
    final.wait_for(timeout=60_000)
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    seen = page.evaluate("window.__seen")
    # The answer streamed: the page showed the first sentence before the second existed.
    assert any("Let me look." in t and "Running two commands." not in t for t in seen["texts"]), seen["texts"]
    assert seen["tools"]["c2"] == ["pending", "running", "completed"], seen["tools"]
    assert seen["tools"]["c1"][-1] == "completed"
    assert "two" in page.locator('[data-call-id="c2"] pre.term').inner_text()
    assert page.locator("article.msg.assistant pre.code .hljs-built_in").count() >= 1  # highlighted code
    assert page.get_by_test_id("step-cost").count() == 2
    assert "tokens" in page.get_by_test_id("totals").inner_text()
    # The generated title reaches the list and the header live.
    page.get_by_role("navigation", name="Sessions").get_by_text("Two commands").wait_for()
    app.shot("session")

    project = Session.objects.get(pk=session_id).project
    assert project.name == "Web demo" and project.org_id == alice.org.pk


def test_a_reload_mid_stream_shows_the_same_conversation_once(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    scripted_credential(alice)
    script_id = script.load(
        [
            [
                {"text": "First half, "},
                {"delay": 0.2},
                {"text": "still going, "},
                {"delay": 2.5},
                {"text": "second half."},
            ]
        ]
    )
    app = open_app(alice)
    page = app.page
    new_session(page, alice, f"scripted/{script_id}", sessions_made)
    page.get_by_role("textbox", name="Message").fill("stream please")
    page.get_by_role("button", name="Send").click()
    page.get_by_text("First half,").wait_for()

    page.reload()
    page.get_by_text("second half.").wait_for(timeout=30_000)
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    transcript = page.get_by_role("log", name="Conversation")
    assert transcript.locator("article.msg.user").count() == 1
    assert transcript.locator("article.msg.assistant").count() == 1
    assert transcript.inner_text().count("First half, still going, second half.") == 1
    assert transcript.inner_text().count("stream please") == 1
    session = Session.objects.get(pk=page.url.rsplit("/s/", 1)[1])
    assert Message.objects.filter(session=session).count() == 2


def test_the_model_picker_offers_the_credentials_models_and_the_prompt_uses_the_one_picked(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    scripted_credential(alice)
    default = script.load([[{"text": "answered by the default model"}]])
    picked = script.load([[{"text": "answered by the picked model"}]])
    ProviderCredential.objects.filter(org=alice.org, provider="scripted").update(
        models_list=[default, picked]
    )
    app = open_app(alice)
    page = app.page
    session_id = new_session(page, alice, f"scripted/{default}", sessions_made)
    choices = page.get_by_test_id("model-choices").locator("option")
    choices.nth(1).wait_for(state="attached")
    assert choices.evaluate_all("os => os.map(o => o.value)") == [f"scripted/{default}", f"scripted/{picked}"]

    page.get_by_role("combobox", name="Model").fill(f"scripted/{picked}")
    page.get_by_role("textbox", name="Message").fill("which model?")
    page.get_by_role("button", name="Send").click()
    page.get_by_text("answered by the picked model").wait_for(timeout=30_000)
    user = Message.objects.get(session_id=session_id, role="user")
    assert user.data["model"] == {"providerID": "scripted", "modelID": picked}
