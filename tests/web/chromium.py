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
