"""The test identity provider (tests/oidc_idp) in its own process, and a browser's walk through it."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

ROOT = Path(__file__).resolve().parents[2]
CLIENT_ID = "hangar-test-client"
CLIENT_SECRET = "idp-client-secret-0123456789"
USERS = ("zed:pw-zed:zed@sso.acme.test", "yara:pw-yara:yara@sso.acme.test", "olga:pw-olga:alice@acme.test")


@dataclass
class Idp:
    issuer: str
    process: subprocess.Popen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(redirect_uri: str) -> tuple[Idp, tempfile.TemporaryDirectory]:
    state = tempfile.TemporaryDirectory(prefix="hangar-idp-")
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.oidc_idp.serve",
            str(port),
            state.name,
            CLIENT_ID,
            CLIENT_SECRET,
            redirect_uri,
            *USERS,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    line = process.stdout.readline() if process.stdout else ""
    if line.strip() != "ready":
        process.kill()
        rest = process.stdout.read() if process.stdout else ""
        raise RuntimeError(f"the test identity provider did not start: {line}{rest}")
    return Idp(issuer=f"http://127.0.0.1:{port}/o", process=process), state


def browse_to_callback(authorize_url: str, username: str, password: str) -> dict[str, str]:
    """What a browser does at the provider: open the authorization URL, sign in, follow it back; the query
    of the redirect to Hangar's callback (code and state)."""
    with httpx.Client(follow_redirects=False, timeout=10) as browser:
        answer = browser.get(authorize_url)
        assert answer.status_code == 302, answer.text
        login_url = httpx.URL(authorize_url).join(answer.headers["location"])
        signed_in = browser.post(
            login_url,
            data={
                "username": username,
                "password": password,
                "next": parse_qs(login_url.query.decode())["next"][0],
            },
        )
        assert signed_in.status_code == 302, signed_in.text
        back = browser.get(httpx.URL(authorize_url).join(signed_in.headers["location"]))
        assert back.status_code == 302, back.text
        location = back.headers["location"]
    assert location.startswith("http://127.0.0.1:8000/api/auth/sso/callback"), location
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


def provider_at(org, issuer: str, domain: str = "evil.test"):
    """An enabled provider of `org` at `issuer`, its `domain` proven (as an operator's approval leaves it),
    written directly: the tests of the sign-in's mechanics start from a configured provider."""
    from django.utils import timezone

    from hangar.projects import crypto
    from hangar.sso.models import IdentityProvider, SsoDomain

    provider = IdentityProvider.objects.create(
        org=org, issuer=issuer, client_id="c", client_secret=crypto.encrypt("s")
    )
    SsoDomain.objects.create(
        provider=provider, domain=domain, token="t", verified_by="operator", verified_at=timezone.now()
    )
    return provider
