"""Browser rig: the built web app served by the real platform (Daphne + a Celery worker + the scripted
LLM server, as tests/opencode/live.py starts them), driven in Debian's Chromium through Playwright
(`executable_path=/usr/bin/chromium`: no browser download). Screenshots of each main screen at desktop
and phone width go to var/screenshots/ (git-ignored); axe-core checks each one."""

from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path

import pytest
from django.conf import settings

from tests.engine.conftest import (  # noqa: F401  (fixtures)
    ROOT,
    Worker,
    script,
    scripted,
    scripted_credential,
    sessions_made,
)
from tests.opencode.live import daphne  # noqa: F401
from tests.web.chromium import CHROMIUM, FLAGS, steady

# Playwright's sync API runs its own event loop in this thread; the ORM calls the tests make between
# page actions are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

SHOTS = ROOT / "var" / "screenshots"
AXE = ROOT / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@lru_cache(maxsize=1)
def _axe_source() -> str:
    return AXE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def chromium():
    # Module-scoped: Playwright's sync API keeps an event loop running in this thread while it is open,
    # which would break asyncio tests collected after these.
    from playwright.sync_api import sync_playwright

    if not (ROOT / "frontend" / "dist" / "index.html").exists():
        pytest.fail("the web app is not built: run deploy/test.sh (it runs frontend/build.sh)")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: deploy/setup.sh installs Debian's chromium")
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


class App:
    """One signed-in browser context on the live server, with screenshot and accessibility helpers."""

    def __init__(self, browser, base_url: str):
        self.context = browser.new_context(base_url=base_url, viewport=DESKTOP)
        self.context.set_default_timeout(20_000)
        self.page = steady(self.context.new_page())
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    def sign_in(self, persona) -> App:
        page = self.page
        page.goto("/login")
        page.get_by_label("Email").fill(persona.user.email)
        page.get_by_label("Password").fill("pw-" + persona.user.email)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("button", name="Sign out").wait_for()
        return self

    def shot(self, name: str) -> None:
        """Screenshot at 1280 px and at phone width, and no serious/critical axe violation at either."""
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            self.page.set_viewport_size(size)
            self.page.wait_for_timeout(150)
            self.page.screenshot(path=str(SHOTS / f"{name}-{label}.png"))
            self.assert_accessible(f"{name} ({label})")
        self.page.set_viewport_size(DESKTOP)

    def assert_accessible(self, where: str) -> None:
        if not self.page.evaluate("typeof window.axe !== 'undefined'"):
            # Evaluated over the DevTools protocol: a <script> tag with the source inline is what the
            # page's Content-Security-Policy forbids (hangar/csp.py), and the app runs under it here.
            self.page.evaluate(_axe_source())
        result = self.page.evaluate(
            "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
            ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
            ".map(v => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(', ')}`)"
        )
        assert result == [], f"axe on {where}: {result}"

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def open_app(chromium, daphne):  # noqa: F811
    opened: list[App] = []

    def make(persona=None) -> App:
        app = App(chromium, daphne.url)
        opened.append(app)
        return app.sign_in(persona) if persona is not None else app

    yield make
    for app in opened:
        assert app.errors == [], f"uncaught errors in the page: {app.errors}"
        app.close()


@pytest.fixture(scope="module")
def live_worker(django_db_setup, django_db_blocker):
    """One engine worker for the module's tests (each test's sessions are its own)."""
    worker = Worker(settings.DATABASES["default"]["NAME"])
    yield worker
    worker.stop()
