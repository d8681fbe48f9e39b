"""High 2 in a real browser (Debian Chromium): an org's identity provider whose discovery document names a
`javascript:` authorization endpoint runs no script in Hangar's origin when someone signs in with single
sign-on there. The platform refuses the document; the sign-in page, for its part, navigates only to a
web address it has checked itself, whatever the start answered."""

import json

import pytest

from tests.console.idp import provider_at
from tests.oidc_idp.hostile import HostileIdp, discovery_with

pytestmark = pytest.mark.django_db(transaction=True)

SCRIPT = "javascript:document.title='pwned';window.__pwned=1//"


def script_ran(page) -> bool:
    return page.title() == "pwned" or page.evaluate("() => window.__pwned === 1")


def start_sso(page, email: str) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_role("button", name="Use single sign-on (SSO)").click()


def test_a_javascript_authorization_endpoint_runs_no_script_in_hangars_origin(alice, open_app):
    idp = HostileIdp(discovery_with(authorization_endpoint=SCRIPT))
    try:
        provider_at(alice.org, idp.issuer)
        page = open_app().page
        start_sso(page, "zed@evil.test")
        alert = page.get_by_role("alert")
        alert.wait_for(timeout=10_000)
        assert "authorization_endpoint" in alert.inner_text()
        assert not script_ran(page)
        assert idp.requests >= 1  # the refusal came from the platform reading the provider's document
    finally:
        idp.stop()


def test_the_sign_in_page_navigates_only_to_a_web_address(alice, open_app):
    """Whatever the start answers (a proxy, a bug, a future endpoint), the page goes to http(s) only."""
    page = open_app().page
    page.route(
        lambda url: "/api/auth/sso/start?" in url,
        lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps({"url": SCRIPT})
        ),
    )
    start_sso(page, "zed@evil.test")
    alert = page.get_by_role("alert")
    alert.wait_for(timeout=10_000)
    assert not script_ran(page)
    assert "web address" in alert.inner_text()
    assert page.url.endswith("/login")
