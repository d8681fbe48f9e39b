"""High 2: every URL an identity provider's discovery document names is a web address Hangar accepts:
`https:`, or `http:` only to a host inside the operator's HANGAR_SSO_ALLOWED_NETWORKS. A provider whose
discovery answers a `javascript:` (or `data:`, or plain-http public) authorization endpoint, or any other
such endpoint, gets no sign-in started: the start is a 502 naming the member, never a URL for the browser."""

import pytest

from tests.console.idp import provider_at
from tests.oidc_idp.hostile import HostileIdp, discovery_with

pytestmark = pytest.mark.django_db

START = "/api/auth/sso/start"


@pytest.mark.parametrize(
    ("member", "url"),
    [
        ("authorization_endpoint", "javascript:document.title='pwned'//"),
        ("authorization_endpoint", "data:text/html,<script>alert(1)</script>"),
        ("authorization_endpoint", "http://93.184.216.34/authorize"),
        ("authorization_endpoint", "//93.184.216.34/authorize"),
        ("token_endpoint", "javascript:alert(1)"),
        ("jwks_uri", "file:///etc/passwd"),
        ("userinfo_endpoint", "javascript:alert(1)"),
        ("end_session_endpoint", "javascript:alert(1)"),
        ("end_session_endpoint", "http://93.184.216.34/logout"),
    ],
)
def test_it_refuses_a_discovery_document_naming_a_url_that_is_not_https(api, alice, member, url):
    idp = HostileIdp(discovery_with(**{member: url}))
    try:
        provider_at(alice.org, idp.issuer)
        answer = api().get(START, {"email": "zed@evil.test", "mode": "json"})
        assert answer.status_code == 502, answer.content
        body = answer.json()
        assert body["error"]["code"] == "sso_unavailable" and member in body["error"]["message"]
        assert "url" not in body
        redirect = api().get(START, {"email": "zed@evil.test"})
        assert redirect.status_code == 502 and "Location" not in redirect
    finally:
        idp.stop()


def test_it_sends_the_browser_to_an_https_authorization_endpoint_it_does_not_connect_to(api, alice):
    """The authorization endpoint is the browser's to visit: https anywhere is fine."""
    idp = HostileIdp(discovery_with(authorization_endpoint="https://idp.example.com/authorize?tenant=7"))
    try:
        provider_at(alice.org, idp.issuer)
        answer = api().get(START, {"email": "zed@evil.test", "mode": "json"})
        assert answer.status_code == 200, answer.content
        assert answer.json()["url"].startswith(
            "https://idp.example.com/authorize?tenant=7&response_type=code"
        )
    finally:
        idp.stop()


def test_plain_http_is_only_for_a_host_the_operator_allowed(api, alice, settings):
    """The tests' provider is on 127.0.0.1, which HANGAR_SSO_ALLOWED_NETWORKS opens; a setting that opens
    only another network leaves it closed, http and all."""
    idp = HostileIdp(discovery_with())
    try:
        provider_at(alice.org, idp.issuer)
        assert api().get(START, {"email": "zed@evil.test", "mode": "json"}).status_code == 200
        settings.HANGAR_SSO_ALLOWED_NETWORKS = ["10.0.0.0/8"]
        refused = api().get(START, {"email": "zed@evil.test", "mode": "json"})
        assert refused.status_code == 502, refused.content
    finally:
        idp.stop()
