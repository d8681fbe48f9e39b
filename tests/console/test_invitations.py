"""Invitations by link: an admin invites an email with a role, the mail carries the link, the link works
once and expires, every step is audited, and the org's invitations are its admins' alone."""

import datetime as dt
import re

import pytest
from django.core import mail
from django.test import TestCase
from rest_framework.test import APIClient

from hangar.accounts.models import Invitation, Membership, User
from hangar.audit.models import AuditEvent

pytestmark = pytest.mark.django_db

INVITES = "/api/orgs/{org}/invitations/"


def invite(api, persona, email="newbie@acme.test", role="member", org="acme"):
    with TestCase.captureOnCommitCallbacks(execute=True):
        return api(persona).post(INVITES.format(org=org), {"email": email, "role": role}, format="json")


def link_secret() -> str:
    body = mail.outbox[-1].body
    match = re.search(r"/invite/([A-Za-z0-9_-]+)", body)
    assert match, body
    return match.group(1)


def signed_out_client() -> APIClient:
    return APIClient(REMOTE_ADDR="10.7.7.7")


def test_an_admin_invites_by_email_and_the_mail_carries_a_working_link(api, alice):
    response = invite(api, alice, "Newbie@Acme.test", "viewer")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["email"] == "newbie@acme.test" and body["role"] == "viewer" and body["state"] == "pending"
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["newbie@acme.test"]
    secret = link_secret()
    assert not Invitation.objects.filter(digest=secret).exists()  # only a digest is stored
    preview = signed_out_client().get(f"/api/invitations/{secret}").json()
    assert (
        preview["org"] == "acme" and preview["email"] == "newbie@acme.test" and preview["state"] == "pending"
    )
    row = AuditEvent.objects.get(action="member.invite")
    assert (
        row.org_id == alice.org.pk and row.data["email"] == "newbie@acme.test" and secret not in str(row.data)
    )


def test_accepting_signed_out_creates_the_account_signs_in_and_works_once(api, alice):
    invite(api, alice, role="admin")
    secret = link_secret()
    client = signed_out_client()
    accepted = client.post(f"/api/invitations/{secret}/accept", {"password": "a-Long-pass-123", "name": "N"})
    assert accepted.status_code == 200, accepted.json()
    assert accepted.json()["org"] == "acme" and accepted.json()["role"] == "admin"
    user = User.objects.get(email="newbie@acme.test")
    assert user.check_password("a-Long-pass-123")
    assert Membership.objects.get(org=alice.org, user=user).role == "admin"
    assert client.get("/api/me").json()["email"] == "newbie@acme.test"  # signed in by the session
    added = AuditEvent.objects.get(action="member.add")
    assert added.actor_label == "newbie@acme.test" and added.data["user_created"] is True
    again = signed_out_client().post(f"/api/invitations/{secret}/accept", {"password": "another-Pass-456"})
    assert again.status_code == 410 and again.json()["error"]["code"] == "invitation_accepted"
    assert AuditEvent.objects.filter(action="member.add").count() == 1


def test_a_signed_in_user_accepts_only_an_invitation_to_their_own_address(api, alice, charlie):
    invite(api, alice, email=charlie.user.email, role="member")
    secret = link_secret()
    wrong = APIClient()
    wrong.force_authenticate(User.objects.create_user("mallory@x.test", password="pw"))
    refused = wrong.post(f"/api/invitations/{secret}/accept", {})
    assert refused.status_code == 403
    right = APIClient()
    right.force_authenticate(charlie.user)
    assert right.post(f"/api/invitations/{secret}/accept", {}).status_code == 200
    assert Membership.objects.filter(org=alice.org, user=charlie.user, role="member").exists()


def test_an_existing_account_must_sign_in_rather_than_set_a_password(api, alice, charlie):
    invite(api, alice, email=charlie.user.email)
    secret = link_secret()
    response = signed_out_client().post(f"/api/invitations/{secret}/accept", {"password": "take-Over-123"})
    assert response.status_code == 401
    assert User.objects.get(pk=charlie.user.pk).check_password("pw-charlie@globex.test")
    assert not Membership.objects.filter(org=alice.org, user=charlie.user).exists()


def test_an_expired_or_revoked_link_is_refused(api, alice):
    invite(api, alice, email="late@acme.test")
    late = link_secret()
    Invitation.objects.filter(email="late@acme.test").update(
        expires_at=dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
    )
    response = signed_out_client().post(f"/api/invitations/{late}/accept", {"password": "a-Long-pass-123"})
    assert response.status_code == 410 and response.json()["error"]["code"] == "invitation_expired"
    invite(api, alice, email="gone@acme.test")
    gone = link_secret()
    row = Invitation.objects.get(email="gone@acme.test")
    assert api(alice).delete(INVITES.format(org="acme") + str(row.pk)).status_code == 204
    response = signed_out_client().post(f"/api/invitations/{gone}/accept", {"password": "a-Long-pass-123"})
    assert response.status_code == 410 and response.json()["error"]["code"] == "invitation_revoked"
    assert AuditEvent.objects.filter(action="member.invite_revoke").count() == 1
    assert not User.objects.filter(email__in=["late@acme.test", "gone@acme.test"]).exists()
    assert signed_out_client().get("/api/invitations/not-a-real-secret").status_code == 404


def test_a_weak_password_is_a_400_naming_password_and_writes_nothing(api, alice, settings):
    settings.AUTH_PASSWORD_VALIDATORS = [
        {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}
    ]
    invite(api, alice)
    response = signed_out_client().post(f"/api/invitations/{link_secret()}/accept", {"password": "short"})
    assert response.status_code == 400 and "password" in response.json()["error"]["fields"]
    assert not User.objects.filter(email="newbie@acme.test").exists()
    assert Invitation.objects.get(email="newbie@acme.test").state() == "pending"


def test_members_viewers_and_auditors_cannot_invite_or_list(api, bob, dave, erin):
    for persona in (bob, dave, erin):
        assert invite(api, persona).status_code == 403
        assert api(persona).get(INVITES.format(org="acme")).status_code == 403
    assert not Invitation.objects.exists() and not mail.outbox


def test_only_an_owner_invites_an_owner(api, alice, bob):
    Membership.objects.filter(pk=bob.membership.pk).update(role="admin")
    assert invite(api, bob, role="owner").status_code == 403
    assert invite(api, alice, role="owner").status_code == 201


def test_another_orgs_invitations_are_not_found(api, alice, charlie):
    invite(api, alice)
    row = Invitation.objects.get()
    assert api(charlie).get(INVITES.format(org="acme")).status_code == 404
    assert invite(api, charlie, org="acme").status_code == 404
    assert api(charlie).delete(INVITES.format(org="globex") + str(row.pk)).status_code == 404
    assert api(charlie).delete(INVITES.format(org="acme") + str(row.pk)).status_code == 404
    assert Invitation.objects.get().state() == "pending"
    assert [r["email"] for r in api(alice).get(INVITES.format(org="acme")).json()] == ["newbie@acme.test"]


def test_inviting_an_existing_member_is_a_400_naming_email(api, alice, bob):
    response = invite(api, alice, email=bob.user.email)
    assert response.status_code == 400 and "email" in response.json()["error"]["fields"]


def test_an_address_with_a_pending_invitation_cannot_be_invited_again(api, alice):
    assert invite(api, alice, "newbie@acme.test").status_code == 201
    again = invite(api, alice, "Newbie@ACME.test", "admin")
    assert again.status_code == 400, again.content
    message = " ".join(again.json()["error"]["fields"]["email"])
    assert "pending" in message and "revoke" in message.lower(), message
    assert Invitation.objects.count() == 1 and len(mail.outbox) == 1
    # Once the pending one is revoked (or used, or expired), the address may be invited again.
    row = Invitation.objects.get()
    assert api(alice).delete(INVITES.format(org="acme") + str(row.pk)).status_code == 204
    assert invite(api, alice, "newbie@acme.test").status_code == 201
    Invitation.objects.filter(revoked_at=None).update(expires_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    assert invite(api, alice, "newbie@acme.test").status_code == 201


def test_the_inviting_admin_gets_the_link_once_to_copy(api, alice):
    response = invite(api, alice, "newbie@acme.test")
    link = response.json()["link"]
    assert link.endswith("/invite/" + link_secret())  # the same link the mail carries
    listed = api(alice).get(INVITES.format(org="acme")).json()
    assert "link" not in listed[0]  # only a digest is stored: the list cannot show it again
