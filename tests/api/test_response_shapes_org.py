"""The audit log, SSO, invitation, permission-preview and share answers are exactly what their output
serializers declare (tests.api.schema_check), in the states whose shapes differ: an empty audit page and
full ones with and without a next cursor, no SSO provider and one with an unproven and a proven domain, an
invitation read signed out and signed in, a preview with and without a project, a share with messages."""

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from hangar.accounts.actors import system_actor
from hangar.audit.services import audit_record
from hangar.conversations.services import message_create, session_create
from hangar.conversations.share_services import session_share
from tests.api.schema_check import assert_conforms
from tests.console import idp as idp_mod

pytestmark = pytest.mark.django_db

ORG = "/api/orgs/acme"


def test_audit_pages_conform_empty_full_and_last(api, alice):
    client = api(alice)
    empty = assert_conforms(client.get(f"{ORG}/audit/", {"action": "nothing.happened"}), "audit_list")
    assert empty == {"results": [], "next_cursor": None}
    for i in range(3):
        with transaction.atomic():  # as a request commits each row
            audit_record(
                actor=alice.actor, action="thing.do", target_type="t", target_id=str(i), data={"i": i}
            )
    with transaction.atomic():  # a system row: no user, no address
        audit_record(actor=system_actor(alice.org.pk), action="thing.do", target_type="t", target_id="s")
    first = assert_conforms(client.get(f"{ORG}/audit/", {"action": "thing.do", "limit": 2}), "audit_list")
    assert len(first["results"]) == 2 and first["next_cursor"]
    last = client.get(f"{ORG}/audit/", {"action": "thing.do", "limit": 2, "cursor": first["next_cursor"]})
    body = assert_conforms(last, "audit_list")
    assert len(body["results"]) == 2 and body["next_cursor"] is None
    assert {row["actor"]["type"] for row in first["results"] + body["results"]} == {"user", "system"}


def test_audit_retention_conforms(api, alice):
    client = api(alice)
    days = assert_conforms(client.get(f"{ORG}/audit/retention"), "audit_retention_get")["days"]
    changed = client.put(f"{ORG}/audit/retention", {"days": days + 1}, format="json")
    assert assert_conforms(changed, "audit_retention_set") == {"days": days + 1}


def test_sso_conforms_without_a_provider_then_with_unproven_and_proven_domains(
    api, alice, provider_server, dns
):
    client = api(alice)
    none = assert_conforms(client.get(f"{ORG}/sso"), "sso_provider_get")
    assert none["provider"] is None and none["redirect_uri"].endswith("/api/auth/sso/callback")
    body = {
        "issuer": provider_server.issuer,
        "client_id": idp_mod.CLIENT_ID,
        "client_secret": idp_mod.CLIENT_SECRET,
        "domains": ["sso.acme.test", "corp.acme.test"],
    }
    provider = assert_conforms(client.put(f"{ORG}/sso", body, format="json"), "sso_provider_set")["provider"]
    assert provider["has_client_secret"] and all(c["verified_at"] is None for c in provider["domain_claims"])
    proof = next(c for c in provider["domain_claims"] if c["domain"] == "sso.acme.test")
    dns.zone.txt[proof["txt_name"]] = [proof["txt_value"]]
    proven = assert_conforms(client.post(f"{ORG}/sso/domains/sso.acme.test/verify"), "sso_domain_verify")
    assert proven["verified"] and proven["verified_by"] == "dns" and proven["verified_at"]
    read = assert_conforms(client.get(f"{ORG}/sso"), "sso_provider_get")
    assert {c["domain"]: c["verified"] for c in read["provider"]["domain_claims"]} == {
        "corp.acme.test": False,
        "sso.acme.test": True,
    }


def _invite(api, alice, email: str) -> str:
    created = api(alice).post(f"{ORG}/invitations/", {"email": email, "role": "member"}, format="json")
    assert created.status_code == 201, created.content
    return created.json()["link"].rsplit("/", 1)[1]


def test_an_invitation_preview_and_accept_conform_signed_out_and_signed_in(api, alice, charlie):
    secret = _invite(api, alice, "newbie@acme.test")
    signed_out = APIClient(REMOTE_ADDR="10.7.7.8")
    preview = assert_conforms(signed_out.get(f"/api/invitations/{secret}"), "invitation_preview")
    assert preview["signed_in_as"] is None and preview["state"] == "pending"
    accepted = signed_out.post(
        f"/api/invitations/{secret}/accept", {"password": "a-Long-pass-123"}, format="json"
    )
    assert assert_conforms(accepted, "invitation_accept")["me"]["email"] == "newbie@acme.test"
    assert (
        assert_conforms(signed_out.get(f"/api/invitations/{secret}"), "invitation_preview")["state"]
        == "accepted"
    )

    theirs = _invite(api, alice, charlie.user.email)
    signed_in = APIClient()
    signed_in.force_authenticate(charlie.user)
    preview = assert_conforms(signed_in.get(f"/api/invitations/{theirs}"), "invitation_preview")
    assert preview["signed_in_as"] == charlie.user.email
    joined = assert_conforms(
        signed_in.post(f"/api/invitations/{theirs}/accept", {}, format="json"), "invitation_accept"
    )
    assert joined["org"] == "acme" and {o["org"] for o in joined["me"]["orgs"]} >= {"acme", "globex"}


def test_the_permission_preview_conforms_for_the_org_and_a_project(api, alice, bob):
    alice.project.permission_rules = [{"permission": "bash", "pattern": "git *", "action": "deny"}]
    alice.project.save(update_fields=["permission_rules"])
    org_only = {"tool": "bash", "pattern": "ls"}
    plain = assert_conforms(
        api(bob).post(f"{ORG}/permission-preview", org_only, format="json"), "permission_preview"
    )
    assert plain["decided_by"]["layer"] in ("default", "agent") and plain["matched"]
    in_project = {
        "tool": "bash",
        "pattern": "git push",
        "project": alice.project.pk,
        "session_rules": [{"permission": "bash", "pattern": "git push", "action": "ask"}],
    }
    decided = assert_conforms(
        api(bob).post(f"{ORG}/permission-preview", in_project, format="json"), "permission_preview"
    )
    assert decided["action"] == "deny" and sum(row["applies"] for row in decided["matched"]) == 1


def test_a_share_view_conforms_empty_and_with_messages(api, alice):
    session = session_create(actor=alice.actor, project=alice.project, title="shared")
    token = session_share(actor=alice.actor, session=session).share["url"].rsplit("/", 1)[1]
    client = api(alice)
    empty = assert_conforms(client.get(f"/api/shares/{token}"), "share_view")
    assert empty["messages"] == [] and empty["share"]["audience"] == "members"
    info = {
        "role": "user",
        "time": {"created": 1},
        "agent": "build",
        "model": {"providerID": "p", "modelID": "m"},
    }
    message_create(session=session, data=info, parts=[{"type": "text", "text": "hello"}])
    full = assert_conforms(client.get(f"/api/shares/{token}"), "share_view")
    assert [part["text"] for part in full["messages"][0]["parts"]] == ["hello"]
