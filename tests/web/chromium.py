"""Debian's Chromium as the web tests and bench/web_stream.py launch it through Playwright (never a
downloaded browser): where it is and its flags. No Django, no pytest: the bench imports it too."""

import os

CHROMIUM = os.environ.get("HANGAR_CHROMIUM", "/usr/bin/chromium")
# Headless, without a sandbox of its own (the tests run as root in a container), and without anything
# that would reach the internet on its own (sync, component updates, QUIC probes).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def steady(page):
    """`page` whose goto and reload send a navigation again when Chromium dropped it with
    net::ERR_NETWORK_CHANGED: Chromium aborts what is in flight when an interface appears on the machine,
    and the tests beside it make Docker networks all the while (the app's own GETs retry by themselves:
    frontend/src/api/client.ts). And whose screenshot is taken again once when Chromium gave none in its
    timeout (seen once in a full run, on a page it had just shot at another width in under a second)."""
    from playwright.sync_api import Error, TimeoutError

    screenshot = page.screenshot

    def screenshot_again(*args, **kwargs):
        try:
            return screenshot(*args, **kwargs)
        except TimeoutError:
            return screenshot(*args, **kwargs)

    def again(navigate):
        def navigate_steadily(*args, **kwargs):
            for _ in range(2):
                try:
                    return navigate(*args, **kwargs)
                except Error as exc:
                    if "ERR_NETWORK_CHANGED" not in str(exc):
                        raise
            return navigate(*args, **kwargs)

        return navigate_steadily

    page.goto, page.reload, page.screenshot = again(page.goto), again(page.reload), screenshot_again
    return page
