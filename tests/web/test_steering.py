"""Steering a run from the browser: permission replies, stop, queued messages, the terminal, a dropped
stream, and a session of another org opened by URL."""

import re

import pytest

from hangar.conversations.models import Part, PermissionRequest, Session

pytestmark = pytest.mark.django_db(transaction=True)


def bash(call_id: str, command: str) -> dict:
    return {
        "tool_calls": [
            {"name": "bash", "id": call_id, "arguments": {"command": command, "description": command}}
        ]
    }


def start_session(app, persona, sessions_made, prompt: str | None = None) -> str:
    page = app.page
    page.goto(f"/o/{persona.org.slug}/p/{persona.project.pk}")
    page.get_by_role("button", name="New session").click()
    page.wait_for_url("**/s/ses_*")
    session_id = page.url.rsplit("/s/", 1)[1]
    sessions_made.append(session_id)
    if prompt:
        page.get_by_role("textbox", name="Message").fill(prompt)
        page.get_by_role("textbox", name="Message").press("Enter")
    return session_id


def use_script(persona, script, scripted_credential, turns, **project) -> None:
    scripted_credential(persona)
    persona.project.default_model = f"scripted/{script.load(turns)}"
    for name, value in project.items():
        setattr(persona.project, name, value)
    persona.project.save()


def test_alice_approves_one_command_and_rejects_the_next_with_a_message(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    use_script(
        alice,
        script,
        scripted_credential,
        [[bash("c1", "echo approved")], [bash("c2", "rm -rf /workspace/src")], [{"text": "Understood."}]],
        permission_rules=[{"permission": "bash", "pattern": "*", "action": "ask"}],
    )
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "clean up")
    card = page.get_by_role("alert", name="Permission request: bash")
    card.get_by_text("echo approved").wait_for(timeout=60_000)
    app.shot("permission")
    card.get_by_role("button", name="Allow once").click()
    page.locator('[data-call-id="c1"][data-state="completed"]').wait_for(timeout=60_000)

    card.get_by_text("rm -rf /workspace/src").wait_for(timeout=60_000)
    card.get_by_role("button", name="Reject…").click()
    card.get_by_label("Tell the agent why").fill("keep the sources")
    card.get_by_role("button", name="Reject", exact=True).click()
    page.locator('[data-call-id="c2"][data-state="error"]').wait_for(timeout=60_000)
    page.get_by_text("Understood.").wait_for(timeout=60_000)
    assert page.get_by_role("alert", name="Permission request: bash").count() == 0
    replies = dict(
        PermissionRequest.objects.filter(session_id=session_id).values_list("status", "reply_message")
    )
    assert replies == {"once": "", "reject": "keep the sources"}


def test_a_message_sent_while_busy_is_queued_and_stop_aborts_the_command(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    use_script(
        alice,
        script,
        scripted_credential,
        [[bash("c1", "sleep 60")], [{"text": "later"}], [{"text": "later"}]],
    )
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made, "wait a minute")
    page.locator('[data-call-id="c1"][data-state="running"]').wait_for(timeout=60_000)
    page.get_by_role("textbox", name="Message").fill("and then this")
    page.get_by_role("button", name="Queue").click()
    page.get_by_test_id("queued").wait_for()
    app.shot("busy-queued")
    page.get_by_role("button", name="Stop").click()
    page.locator('[data-call-id="c1"][data-state="error"]').wait_for(timeout=30_000)
    tool = Part.objects.get(session_id=session_id, type="tool", data__callID="c1").data
    assert tool["state"]["status"] == "error" and "abort" in tool["state"]["error"].lower()


def test_alice_types_in_the_sessions_terminal_and_sees_the_output(alice, open_app, sessions_made):
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made)
    page.get_by_role("link", name="Terminal").click()
    page.get_by_test_id("terminal-state").filter(has_text="open").wait_for(timeout=60_000)
    page.locator(".xterm-rows", has_text="$").wait_for(timeout=20_000)  # the shell's prompt
    page.get_by_test_id("terminal").click()
    page.keyboard.type("echo hangar-$((6*7))\n")
    page.locator(".xterm-rows", has_text="hangar-42").wait_for(timeout=20_000)
    app.shot("terminal")
    assert Session.objects.filter(pk=session_id).exists()


def test_a_dropped_stream_shows_the_banner_and_resumes_without_a_gap(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    use_script(
        alice,
        script,
        scripted_credential,
        [
            [
                {"text": "Before the drop. "},
                {"pause": 0.2},
                {"text": "Still before. "},
                {"pause": 2.0},
                bash("c1", "echo during"),
            ],
            [{"text": "After the drop."}],
        ],
    )
    app = open_app(alice)
    page = app.page
    sockets = []

    def route(ws):
        ws.connect_to_server()
        sockets.append(ws)

    page.route_web_socket(re.compile(r"/ws/sessions/[^/]+/\?after="), route)
    session_id = start_session(app, alice, sessions_made, "go")
    page.get_by_text("Before the drop.").wait_for(timeout=60_000)
    sockets[0].close(code=4000, reason="test drop")
    page.get_by_test_id("reconnecting").wait_for(timeout=5_000)
    app.shot("reconnecting")
    page.get_by_text("After the drop.").wait_for(timeout=60_000)
    page.get_by_test_id("session-status").filter(has_text="idle").wait_for()
    assert page.get_by_test_id("reconnecting").count() == 0
    assert len(sockets) >= 2
    transcript = page.get_by_role("log", name="Conversation")
    assert transcript.inner_text().count("Before the drop. Still before.") == 1
    assert page.locator('[data-call-id="c1"][data-state="completed"]').count() == 1
    # No gap: the page's cursor reached the session's last stored event, and it shows every stored part.
    session = Session.objects.get(pk=session_id)
    assert page.evaluate("window.hangarStream.last") == session.event_seq
    shown = page.locator("article.msg .md, [data-call-id], [data-testid=step-cost]").count()
    stored = Part.objects.filter(session=session, type__in=["text", "tool", "step-finish"]).count()
    assert shown == stored


def test_charlie_cannot_open_alices_session_by_url(alice, charlie, open_app, sessions_made):
    from hangar.conversations.services import session_create

    session = session_create(actor=alice.actor, project=alice.project, title="Acme secret plans")
    app = open_app(charlie)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}")
    page.get_by_role("alert").filter(has_text="Not found").first.wait_for()
    page.goto(f"/o/globex/p/{charlie.project.pk}/s/{session.pk}")
    page.get_by_role("heading", name="Session not found").wait_for()
    app.shot("not-found")
    assert "Acme secret plans" not in page.content()


def test_settings_show_members_and_a_new_token_only_once(alice, bob, open_app):
    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/settings")
    page.get_by_role("cell", name="bob@acme.test").wait_for()
    page.get_by_role("region", name="API tokens").get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    token = page.get_by_test_id("new-token").inner_text()
    assert token and token.startswith(page.get_by_role("cell", name=re.compile(r"…$")).first.inner_text()[:4])
    app.shot("settings")
    page.reload()
    page.get_by_role("cell", name="ci", exact=True).wait_for()
    assert token not in page.content()


PNG_DATA_URL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
# The bytes are decoded in the page: a fetch() of a data: URL is a connection the app's
# Content-Security-Policy refuses (connect-src is the platform and its WebSocket only).
PASTE_PNG = """([selector, url]) => Promise.resolve(
  new Blob([Uint8Array.from(atob(url.split(',')[1]), c => c.charCodeAt(0))], {type: 'image/png'})
).then(blob => {
  const data = new DataTransfer();
  data.items.add(new File([blob], 'shot.png', {type: 'image/png'}));
  document.querySelector(selector).dispatchEvent(
    new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
})"""


def test_at_names_a_workspace_file_and_a_pasted_image_goes_with_the_prompt(
    alice, open_app, script, scripted_credential, live_worker, sessions_made
):
    from hangar.engine.workspace.sandboxes import sandbox_for

    use_script(alice, script, scripted_credential, [[{"text": "It prints hi."}]])
    app = open_app(alice)
    page = app.page
    session_id = start_session(app, alice, sessions_made)
    sandbox_for(Session.objects.get(pk=session_id)).write("/workspace/src/app.py", "print('hi')\n")
    box = page.get_by_role("textbox", name="Message")
    box.press_sequentially("explain @ap")
    files = page.get_by_role("listbox", name="Files")
    files.get_by_role("option", name="src/app.py").wait_for()
    app.shot("composer-mention")
    box.press("Enter")  # picks the highlighted file, does not send
    assert box.input_value() == "explain @src/app.py "
    page.evaluate(PASTE_PNG, ["#prompt", PNG_DATA_URL])
    page.get_by_role("list", name="Attached files").get_by_text("shot.png").wait_for()
    box.press("Enter")
    page.get_by_role("list", name="Attached files").wait_for(state="detached")
    page.get_by_text("It prints hi.").wait_for(timeout=60_000)  # the run ended: nothing left running

    message = Session.objects.get(pk=session_id).messages.get(role="user")
    parts = [p.data for p in message.parts.order_by("id")]
    assert parts[0]["text"] == "explain @src/app.py"
    assert parts[1]["synthetic"] and '"filePath": "/workspace/src/app.py"' in parts[1]["text"]
    assert "1: print('hi')" in parts[2]["text"]
    assert parts[3]["url"] == "file:///workspace/src/app.py" and parts[3]["filename"] == "src/app.py"
    image = {k: parts[4][k] for k in ("type", "mime", "filename", "url")}
    assert image == {"type": "file", "mime": "image/png", "filename": "shot.png", "url": PNG_DATA_URL}
