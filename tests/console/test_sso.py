"""Single sign-on with OpenID Connect against a real provider (django-oauth-toolkit in its own process,
tests/oidc_idp): the code flow with PKCE, state and nonce; the ID token verified against the provider's
JWKS; the first sign-in provisions the member with the org's default role, the second reuses them; every
sign-in and refusal is audited; the provider's configuration is the org admins' alone and its issuer is
checked against private addresses."""

import io

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from hangar.accounts.models import Membership, User
from hangar.audit.models import AuditEvent
from hangar.sso.models import IdentityProvider, SsoIdentity
from tests.console import idp as idp_mod

pytestmark = pytest.mark.django_db

SSO = "/api/orgs/{org}/sso"
JSON = "application/json"


@pytest.fixture(scope="module")
def idp():
    server, state = idp_mod.start(f"{settings.PUBLIC_URL}/api/auth/sso/callback")
    yield server
    server.process.kill()
    server.process.wait()
    state.cleanup()


def configure(api, persona, issuer, org="acme", approve=True, **extra):
    """Set the org's provider; with `approve`, the operator then approves its domains (an unproven domain
    routes no sign-in: tests/console/test_sso_domains.py)."""
    body = {
        "issuer": issuer,
        "client_id": idp_mod.CLIENT_ID,
        "client_secret": idp_mod.CLIENT_SECRET,
        "domains": ["sso.acme.test"],
        "default_role": "viewer",
        **extra,
    }
    answer = api(persona).put(SSO.format(org=org), body, format="json")
    if approve and answer.status_code == 200:
        for domain in answer.json()["provider"]["domains"]:
            call_command("sso_domain_approve", org, domain, stdout=io.StringIO())
    return answer


def sign_in(email: str, username: str, password: str) -> tuple[Client, object]:
    browser = Client()
    start = browser.get("/api/auth/sso/start", {"email": email, "next": "/o/acme"})
    assert start.status_code == 302, start.content
    query = idp_mod.browse_to_callback(start["Location"], username, password)
    return browser, browser.get("/api/auth/sso/callback", query, HTTP_ACCEPT=JSON)


def test_first_sign_in_provisions_the_member_and_the_second_reuses_them(api, alice, idp):
    configured = configure(api, alice, idp.issuer)
    assert configured.status_code == 200, configured.json()
    assert configured.json()["provider"]["has_client_secret"] is True
    stored = IdentityProvider.objects.get(org=alice.org).client_secret
    assert stored and idp_mod.CLIENT_SECRET not in stored  # encrypted at rest

    browser, done = sign_in("zed@sso.acme.test", "zed", "pw-zed")
    assert done.status_code == 302 and done["Location"] == "/o/acme", done.content
    me = browser.get("/api/me").json()
    assert me["email"] == "zed@sso.acme.test" and me["orgs"] == [
        {"org": "acme", "org_name": "Acme", "role": "viewer"}
    ]
    zed = User.objects.get(email="zed@sso.acme.test")
    assert not zed.has_usable_password()
    assert AuditEvent.objects.filter(action="member.add", data__via="sso").count() == 1

    _again, second = sign_in("zed@sso.acme.test", "zed", "pw-zed")
    assert second.status_code == 302
    assert User.objects.filter(email="zed@sso.acme.test").count() == 1
    assert Membership.objects.filter(user=zed).count() == 1 and SsoIdentity.objects.count() == 1
    sign_ins = AuditEvent.objects.filter(action="auth.sign_in").order_by("id")
    assert [row.data["first"] for row in sign_ins] == [True, False]
    assert all(row.org_id == alice.org.pk and row.actor_label == "zed@sso.acme.test" for row in sign_ins)
    assert not AuditEvent.objects.filter(data__icontains=idp_mod.CLIENT_SECRET).exists()


def test_a_callback_is_good_once_and_only_for_the_browser_that_started_it(api, alice, idp):
    configure(api, alice, idp.issuer)
    browser = Client()
    start = browser.get("/api/auth/sso/start", {"email": "yara@sso.acme.test"})
    query = idp_mod.browse_to_callback(start["Location"], "yara", "pw-yara")
    other = Client().get("/api/auth/sso/callback", query, HTTP_ACCEPT=JSON)
    assert other.status_code == 400 and other.json()["error"]["code"] == "sso_state"
    assert browser.get("/api/auth/sso/callback", query).status_code == 302
    replay = browser.get("/api/auth/sso/callback", query, HTTP_ACCEPT=JSON)
    assert replay.status_code == 400 and replay.json()["error"]["code"] == "sso_state"


def test_a_forged_code_is_refused_and_audited(api, alice, idp):
    configure(api, alice, idp.issuer)
    browser = Client()
    start = browser.get("/api/auth/sso/start", {"email": "zed@sso.acme.test"})
    query = idp_mod.browse_to_callback(start["Location"], "zed", "pw-zed")
    refused = browser.get("/api/auth/sso/callback", {**query, "code": "forged"}, HTTP_ACCEPT=JSON)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "sso_refused"
    assert not User.objects.filter(email="zed@sso.acme.test").exists()
    failed = AuditEvent.objects.get(action="auth.sign_in_failed")
    assert failed.org_id == alice.org.pk and "400" in failed.data["reason"]


def test_a_wrong_client_secret_fails_at_the_token_endpoint(api, alice, idp):
    configure(api, alice, idp.issuer, client_secret="not-the-secret-at-all")
    _browser, done = sign_in("zed@sso.acme.test", "zed", "pw-zed")
    assert done.status_code == 403
    assert not User.objects.filter(email="zed@sso.acme.test").exists()


def test_an_existing_account_is_not_taken_over_by_an_org_provider(api, alice, charlie, idp):
    """globex maps acme.test to its own provider, whose user claims alice's address."""
    response = configure(api, charlie, idp.issuer, org="globex", domains=["acme.test"], default_role="admin")
    assert response.status_code == 200
    browser, done = sign_in("alice@acme.test", "olga", "pw-olga")
    assert done.status_code == 403
    assert browser.get("/api/me").status_code in (401, 403)
    assert not Membership.objects.filter(org=charlie.org, user=alice.user).exists()


def test_a_proven_domain_belongs_to_one_org(api, alice, charlie, idp):
    assert configure(api, alice, idp.issuer).status_code == 200
    taken = configure(api, charlie, idp.issuer, org="globex", approve=False)
    assert taken.status_code == 400 and "domains" in taken.json()["error"]["fields"]


def test_a_bad_domain_is_a_400_naming_it(api, alice, idp):
    response = configure(api, alice, idp.issuer, domains=["sso.acme.test", "not a domain"])
    assert response.status_code == 400 and "domains[1]" in response.json()["error"]["fields"]


def test_an_issuer_on_a_private_or_metadata_address_is_refused(api, alice, settings):
    settings.HANGAR_SSO_ALLOWED_NETWORKS = []
    for issuer in (
        "https://127.0.0.1/o",
        "https://169.254.169.254/latest",
        "https://10.1.2.3/o",
        "http://idp.example.com",
    ):
        response = configure(api, alice, issuer)
        assert response.status_code == 400 and "issuer" in response.json()["error"]["fields"], issuer
    assert not IdentityProvider.objects.exists()


def test_an_unmapped_domain_has_no_sign_in(db):
    response = Client().get("/api/auth/sso/start", {"email": "who@nowhere.test"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "sso_not_configured"


def test_only_admins_set_it_auditors_read_it_and_other_orgs_see_nothing(api, alice, bob, erin, charlie, idp):
    assert configure(api, alice, idp.issuer).status_code == 200
    for persona in (bob, erin):
        assert configure(api, persona, idp.issuer).status_code == 403
        assert api(persona).delete(SSO.format(org="acme")).status_code == 403
    assert api(bob).get(SSO.format(org="acme")).status_code == 403
    read = api(erin).get(SSO.format(org="acme")).json()
    assert read["provider"]["domains"] == ["sso.acme.test"] and "client_secret" not in read["provider"]
    assert api(charlie).get(SSO.format(org="acme")).status_code == 404
    assert configure(api, charlie, idp.issuer, org="acme").status_code == 404
    assert api(charlie).delete(SSO.format(org="acme")).status_code == 404
    assert IdentityProvider.objects.get().org_id == alice.org.pk
    assert api(alice).delete(SSO.format(org="acme")).status_code == 204
    assert AuditEvent.objects.filter(action__startswith="sso.provider.").count() == 2


def test_the_web_app_asks_for_the_url_as_json(api, alice, idp):
    configure(api, alice, idp.issuer)
    browser = Client()
    answer = browser.get("/api/auth/sso/start", {"email": "zed@sso.acme.test", "mode": "json"})
    assert answer.status_code == 200 and answer.json()["url"].startswith(idp.issuer + "/authorize/")
    query = idp_mod.browse_to_callback(answer.json()["url"], "zed", "pw-zed")
    assert browser.get("/api/auth/sso/callback", query).status_code == 302


def test_a_browser_refused_at_the_callback_goes_back_to_the_sign_in_page(api, alice, idp):
    configure(api, alice, idp.issuer)
    browser = Client()
    start = browser.get("/api/auth/sso/start", {"email": "zed@sso.acme.test"})
    query = idp_mod.browse_to_callback(start["Location"], "zed", "pw-zed")
    refused = browser.get("/api/auth/sso/callback", {**query, "code": "forged"}, HTTP_ACCEPT="text/html")
    assert refused.status_code == 302 and refused["Location"] == "/login?sso_error=sso_refused"
    assert AuditEvent.objects.filter(action="auth.sign_in_failed").count() == 1


def test_a_start_is_never_cached_and_counts_as_a_sign_in_attempt(api, alice, idp, settings):
    configure(api, alice, idp.issuer)
    settings.HANGAR_LOGIN_MAX_PER_ACCOUNT = 2
    browser = Client()
    for _ in range(2):
        start = browser.get("/api/auth/sso/start", {"email": "zed@sso.acme.test"})
        assert start.status_code == 302, start.content
        assert "no-store" in start["Cache-Control"] and "private" in start["Cache-Control"]
    refused = browser.get("/api/auth/sso/start", {"email": "zed@sso.acme.test"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    # The same budget as a password: the account's next password attempt waits too.
    login = browser.post(
        "/api/auth/login", {"email": "zed@sso.acme.test", "password": "x"}, content_type=JSON
    )
    assert login.status_code == 429
