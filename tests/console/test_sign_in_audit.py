"""Password sign-ins are audited in every org of the account: a success as auth.sign_in, a wrong
password as auth.sign_in_failed (never the password); an unknown email writes nothing."""

import pytest
from django.db.models import Q

from hangar.accounts.models import Membership, Role
from hangar.audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def login(client, email, password):
    return client.post("/api/auth/login", {"email": email, "password": password}, format="json")


def test_a_sign_in_is_audited_in_each_org_of_the_account(alice, charlie, fresh_ip_client):
    Membership.objects.create(org=charlie.org, user=alice.user, role=Role.MEMBER)
    assert login(fresh_ip_client(), "alice@acme.test", "pw-alice@acme.test").status_code == 200
    rows = AuditEvent.objects.filter(action="auth.sign_in")
    assert sorted(r.org_id for r in rows) == sorted([alice.org.pk, charlie.org.pk])
    assert all(r.actor_label == "alice@acme.test" and r.data == {"method": "password"} for r in rows)


def test_a_failed_sign_in_is_audited_without_the_password_and_an_unknown_email_writes_nothing(
    alice, fresh_ip_client
):
    assert login(fresh_ip_client(), "alice@acme.test", "guess-123").status_code == 401
    row = AuditEvent.objects.get(action="auth.sign_in_failed")
    assert row.org_id == alice.org.pk and row.data["reason"] == "invalid_credentials"
    assert not AuditEvent.objects.filter(Q(data__icontains="guess-123")).exists()
    assert login(fresh_ip_client(), "nobody@acme.test", "x").status_code == 401
    assert AuditEvent.objects.filter(action__startswith="auth.").count() == 1
