"""High 3: an email domain routes sign-ins to an org's identity provider only once the org has proven it:
a DNS TXT record (looked up through Hangar's resolver, here pointed at a real DNS server on 127.0.0.1), or the
operator's approval (manage.py sso_domain_approve). An unproven claim routes nothing and blocks no one; a
proven domain belongs to one org. And an account that exists is never bound to an org it did not join: an
admin who adds one by email sends an invitation it must accept."""

import pytest
from django.core.management import call_command

from hangar.accounts.models import Invitation, Membership
from hangar.audit.models import AuditEvent
from tests.console import idp as idp_mod

pytestmark = pytest.mark.django_db

SSO = "/api/orgs/{org}/sso"
START = "/api/auth/sso/start"


def claim(api, persona, issuer, domains, org):
    body = {
        "issuer": issuer,
        "client_id": idp_mod.CLIENT_ID,
        "client_secret": idp_mod.CLIENT_SECRET,
        "domains": domains,
    }
    return api(persona).put(SSO.format(org=org), body, format="json")


def claim_of(answer, domain):
    return next(c for c in answer.json()["provider"]["domain_claims"] if c["domain"] == domain)


def verify(api, persona, org, domain):
    return api(persona).post(f"{SSO.format(org=org)}/domains/{domain}/verify", format="json")


def test_an_unproven_claim_routes_no_sign_in(api, alice, charlie, provider_server):
    """globex claims acme.test: nothing proves it, so alice's address is not sent to globex's provider."""
    assert claim(api, charlie, provider_server.issuer, ["acme.test"], "globex").status_code == 200
    start = api().get(START, {"email": "alice@acme.test", "mode": "json"})
    assert start.status_code == 404 and start.json()["error"]["code"] == "sso_not_configured", start.content
    assert provider_server.requests == 0


def test_an_unproven_claim_does_not_block_the_org_that_owns_the_domain(api, alice, charlie, provider_server):
    assert claim(api, charlie, provider_server.issuer, ["acme.test"], "globex").status_code == 200
    mine = claim(api, alice, provider_server.issuer, ["acme.test"], "acme")
    assert mine.status_code == 200, mine.content
    assert claim_of(mine, "acme.test")["verified"] is False


def test_a_dns_txt_record_proves_the_domain(api, alice, charlie, provider_server, dns):
    answer = claim(api, alice, provider_server.issuer, ["sso.acme.test"], "acme")
    proof = claim_of(answer, "sso.acme.test")
    assert proof["txt_name"] == "_hangar-challenge.sso.acme.test"
    assert proof["txt_value"].startswith("hangar-domain-verification=")

    missing = verify(api, alice, "acme", "sso.acme.test")
    assert missing.status_code == 400 and "domain" in missing.json()["error"]["fields"], missing.content
    dns.zone.txt[proof["txt_name"]] = ["hangar-domain-verification=someone-elses-token"]
    assert verify(api, alice, "acme", "sso.acme.test").status_code == 400
    assert api().get(START, {"email": "zed@sso.acme.test", "mode": "json"}).status_code == 404

    dns.zone.txt[proof["txt_name"]] = ["v=spf1 -all", proof["txt_value"]]
    proven = verify(api, alice, "acme", "sso.acme.test")
    assert proven.status_code == 200, proven.content
    assert proven.json()["verified"] is True and proven.json()["verified_by"] == "dns"
    assert "_hangar-challenge.sso.acme.test" in dns.zone.queries
    start = api().get(START, {"email": "zed@sso.acme.test", "mode": "json"})
    assert start.status_code == 200 and start.json()["url"].startswith(provider_server.issuer)
    assert AuditEvent.objects.filter(action="sso.domain.verify", data__method="dns").count() == 1

    # Proven, it is acme's alone: globex can no longer claim it, nor verify a claim of its own.
    taken = claim(api, charlie, provider_server.issuer, ["sso.acme.test"], "globex")
    assert taken.status_code == 400 and "domains" in taken.json()["error"]["fields"]


def test_only_the_orgs_admins_verify_its_claims(api, alice, bob, charlie, provider_server, dns):
    answer = claim(api, alice, provider_server.issuer, ["sso.acme.test"], "acme")
    dns.zone.txt["_hangar-challenge.sso.acme.test"] = [claim_of(answer, "sso.acme.test")["txt_value"]]
    assert verify(api, bob, "acme", "sso.acme.test").status_code == 403
    assert verify(api, charlie, "acme", "sso.acme.test").status_code == 404
    assert verify(api, alice, "acme", "other.acme.test").status_code == 404


def test_an_operator_approves_a_domain(api, alice, provider_server):
    claim(api, alice, provider_server.issuer, ["sso.acme.test"], "acme")
    assert api().get(START, {"email": "zed@sso.acme.test", "mode": "json"}).status_code == 404
    call_command("sso_domain_approve", "acme", "sso.acme.test")
    assert api().get(START, {"email": "zed@sso.acme.test", "mode": "json"}).status_code == 200
    read = api(alice).get(SSO.format(org="acme"))
    assert claim_of(read, "sso.acme.test")["verified_by"] == "operator"
    assert AuditEvent.objects.filter(action="sso.domain.verify", data__method="operator").count() == 1


def test_an_operator_cannot_approve_a_domain_another_org_has_proven(alice, charlie, api, provider_server):
    claim(api, alice, provider_server.issuer, ["shared.test"], "acme")
    claim(api, charlie, provider_server.issuer, ["shared.test"], "globex")
    call_command("sso_domain_approve", "acme", "shared.test")
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("sso_domain_approve", "globex", "shared.test")


def test_an_existing_account_is_never_silently_added_to_another_org(api, alice, charlie):
    """acme's admin names charlie's address: charlie gets an invitation to accept, not a membership."""
    response = api(alice).post("/api/orgs/acme/members/", {"email": charlie.user.email}, format="json")
    assert response.status_code == 202, response.content
    assert response.json()["invited"] is True
    assert not Membership.objects.filter(org=alice.org, user=charlie.user).exists()
    assert Invitation.objects.filter(org=alice.org, email=charlie.user.email).count() == 1


def test_a_provisioned_member_of_one_org_is_not_handed_to_another(api, alice, charlie, settings):
    """globex (its domain proven) provisions zed through its own provider; acme's admin then adding zed's
    address does not make the account, which globex's provider signs in as, a member of acme."""
    idp, state = idp_mod.start(f"{settings.PUBLIC_URL}/api/auth/sso/callback")
    try:
        assert claim(api, charlie, idp.issuer, ["sso.acme.test"], "globex").status_code == 200
        call_command("sso_domain_approve", "globex", "sso.acme.test")
        from tests.console.test_sso import sign_in

        _browser, done = sign_in("zed@sso.acme.test", "zed", "pw-zed")
        assert done.status_code == 302, done.content
        added = api(alice).post("/api/orgs/acme/members/", {"email": "zed@sso.acme.test"}, format="json")
        assert added.status_code == 202
        assert not Membership.objects.filter(org=alice.org, user__email="zed@sso.acme.test").exists()
    finally:
        idp.process.kill()
        idp.process.wait()
        state.cleanup()
