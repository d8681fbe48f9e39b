"""Low: secure cookies, HSTS and the proxy's TLS header follow the deployment's environment. A site served
over https (HANGAR_PUBLIC_URL) sends its session and CSRF cookies only over TLS and asks browsers for HSTS;
X-Forwarded-Proto is believed only behind declared proxies (HANGAR_TRUSTED_PROXY_HOPS). Each case loads
the settings module in a fresh interpreter with that environment, as a deployment would."""

import json
import os
import subprocess
import sys

from tests.engine.conftest import ROOT

PROBE = """
import json
import django
django.setup()
from django.conf import settings
from django.test import Client
response = Client().get("/api/health", HTTP_X_FORWARDED_PROTO="https")
print(json.dumps({
    "session_secure": settings.SESSION_COOKIE_SECURE,
    "csrf_secure": settings.CSRF_COOKIE_SECURE,
    "session_httponly": settings.SESSION_COOKIE_HTTPONLY,
    "hsts": settings.SECURE_HSTS_SECONDS,
    "proxy_ssl": settings.SECURE_PROXY_SSL_HEADER,
    "sts_header": response.headers.get("Strict-Transport-Security"),
}))
"""


def settings_under(**env) -> dict:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("HANGAR_HSTS", "HANGAR_SECURE"))}
    environ.update(env, DJANGO_SETTINGS_MODULE="hangar.settings", PYTHONPATH="platform:.")
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_an_https_public_url_makes_cookies_secure_and_turns_hsts_on():
    seen = settings_under(HANGAR_PUBLIC_URL="https://hangar.example.com", HANGAR_TRUSTED_PROXY_HOPS="1")
    assert seen["session_secure"] and seen["csrf_secure"] and seen["session_httponly"]
    assert seen["hsts"] >= 31536000
    assert seen["proxy_ssl"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert seen["sts_header"] and "max-age=" in seen["sts_header"]


def test_a_plain_http_development_url_keeps_cookies_usable_over_http():
    seen = settings_under(HANGAR_PUBLIC_URL="http://127.0.0.1:8000", HANGAR_TRUSTED_PROXY_HOPS="0")
    assert not seen["session_secure"] and not seen["csrf_secure"] and seen["hsts"] == 0


def test_without_a_declared_proxy_a_forwarded_proto_is_not_believed():
    seen = settings_under(HANGAR_PUBLIC_URL="https://hangar.example.com", HANGAR_TRUSTED_PROXY_HOPS="0")
    assert seen["proxy_ssl"] is None and seen["sts_header"] is None
    assert seen["session_secure"]  # the cookies still never travel in clear


def test_the_operator_can_override_hsts():
    seen = settings_under(HANGAR_PUBLIC_URL="https://hangar.example.com", HANGAR_HSTS_SECONDS="0")
    assert seen["hsts"] == 0
