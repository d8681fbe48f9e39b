"""High 3 in the console (real Chromium, real Daphne, a real DNS server on 127.0.0.1 that Daphne's resolver
asks): an admin sets up single sign-on, the page shows the email domain as not proven with the TXT record
to publish; Verify fails while the record is missing, and proves the domain once it is published."""

import pytest
from django.conf import settings

from tests.console.dns_server import LocalDns
from tests.oidc_idp.hostile import HostileIdp, discovery_with
from tests.opencode.live import Daphne

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def dns():
    server = LocalDns()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker, dns):
    """The web, its domain proofs looked up at this module's DNS server."""
    server = Daphne(settings.DATABASES["default"]["NAME"], env={"HANGAR_SSO_DNS_NAMESERVERS": dns.address})
    yield server
    server.stop()


def test_an_admin_proves_a_domain_from_the_console(alice, open_app, dns):
    idp = HostileIdp(discovery_with())
    try:
        app = open_app(alice)
        page = app.page
        page.goto("/o/acme/console/sso")
        form = page.get_by_role("form", name="Identity provider")
        form.get_by_label("Issuer URL").fill(idp.issuer)
        form.get_by_label("Client ID").fill("hangar")
        form.get_by_label("Client secret").fill("s3cret")
        form.get_by_label("Email domains").fill("sso.acme.test")
        form.get_by_role("button", name="Save identity provider").click()
        domains = page.get_by_role("table", name="Email domains")
        domains.get_by_text("Not proven: routes no sign-in").wait_for()
        app.shot("console-sso-domains")
        page.set_viewport_size({"width": 390, "height": 844})
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        page.set_viewport_size({"width": 1280, "height": 800})
        txt_value = domains.locator("code").nth(1).inner_text()
        assert domains.locator("code").nth(0).inner_text() == "_hangar-challenge.sso.acme.test"

        domains.get_by_role("button", name="Verify sso.acme.test").click()
        page.get_by_text("No TXT record at _hangar-challenge.sso.acme.test").wait_for()

        dns.zone.txt["_hangar-challenge.sso.acme.test"] = [txt_value]
        domains.get_by_role("button", name="Verify sso.acme.test").click()
        domains.get_by_text("Proven (DNS)").wait_for()
        assert "_hangar-challenge.sso.acme.test" in dns.zone.queries
    finally:
        idp.stop()
