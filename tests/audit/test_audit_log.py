"""Every write service leaves an audit row (action, actor, target) in its transaction; audit rows can be
neither updated nor deleted, through the ORM or through raw SQL (database trigger)."""

import pytest
from django.db import DatabaseError, connection, transaction

from hangar.accounts.models import Membership, Role
from hangar.accounts.services import member_add, member_remove, member_role_change, org_create
from hangar.accounts.token_services import token_create, token_revoke
from hangar.audit.models import AuditEvent, AuditImmutable
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied
from hangar.projects.credential_services import credential_delete, credential_set
from hangar.projects.env_var_services import env_var_delete, env_var_set
from hangar.projects.services import project_create, project_delete, project_update


def last(action: str) -> AuditEvent:
    return AuditEvent.objects.filter(action=action).latest("id")


def assert_row(action, actor, target, org_id):
    row = last(action)
    assert (row.actor_type, row.actor_id, row.actor_label) == ("user", str(actor.user.pk), actor.label)
    assert (row.target_type, row.target_id, row.org_id) == (target._meta.label_lower, str(target.pk), org_id)
    return row


def test_org_and_member_services_are_audited(alice, charlie):
    org = org_create(actor=alice.actor, name="Skunkworks")
    assert_row("org.create", alice.actor, org, org.pk)
    membership = member_add(actor=alice.actor, org=alice.org, email="new@acme.test", role=Role.VIEWER)
    assert assert_row("member.add", alice.actor, membership, alice.org.pk).data["email"] == "new@acme.test"
    member_role_change(actor=alice.actor, membership=membership, role=Role.MEMBER)
    assert assert_row("member.role_change", alice.actor, membership, alice.org.pk).data == {
        "email": "new@acme.test",
        "from": "viewer",
        "to": "member",
    }
    pk = membership.pk
    member_remove(actor=alice.actor, membership=membership)
    row = last("member.remove")
    assert (row.target_id, row.actor_id, row.org_id) == (str(pk), str(alice.user.pk), alice.org.pk)


def test_token_services_are_audited_without_the_token(alice):
    token, raw = token_create(actor=alice.actor, org=alice.org, user=alice.user, name="ci")
    row = assert_row("token.create", alice.actor, token, alice.org.pk)
    assert raw not in str(row.data) and row.data["prefix"] == token.prefix
    token_revoke(actor=alice.actor, token=token)
    assert_row("token.revoke", alice.actor, token, alice.org.pk)


def test_project_env_and_credential_services_are_audited_without_secrets(alice):
    project = project_create(actor=alice.actor, org=alice.org, name="Audited", setup_script="echo SCRIPT")
    assert_row("project.create", alice.actor, project, alice.org.pk)
    project_update(actor=alice.actor, project=project, setup_script="echo CHANGED")
    assert assert_row("project.update", alice.actor, project, alice.org.pk).data == {
        "fields": ["setup_script"]
    }
    var = env_var_set(actor=alice.actor, project=project, name="PW", value="hunter2")
    assert "hunter2" not in str(assert_row("project.env_set", alice.actor, var, alice.org.pk).data)
    env_var_delete(actor=alice.actor, var=var)
    assert last("project.env_delete").data["name"] == "PW"
    credential = credential_set(
        actor=alice.actor, org=alice.org, provider="openai", api_key="sk-secret-value-1234"
    )
    assert "sk-secret" not in str(assert_row("credential.set", alice.actor, credential, alice.org.pk).data)
    credential_delete(actor=alice.actor, credential=credential)
    assert last("credential.delete").data["provider"] == "openai"
    project_delete(actor=alice.actor, project=project)
    assert last("project.delete").data == {"slug": "audited"}


def test_a_refused_write_leaves_no_audit_row(bob):
    before = AuditEvent.objects.count()
    with pytest.raises(PermissionDenied):
        project_create(actor=bob.actor, org=bob.org, name="nope")
    assert AuditEvent.objects.count() == before


def test_audit_records_ip_and_request_id_from_api_calls(api, alice):
    api(alice).post(
        "/api/orgs/acme/projects/",
        {"name": "viaapi"},
        format="json",
        HTTP_X_REQUEST_ID="req-123",
        REMOTE_ADDR="192.0.2.7",
    )
    row = last("project.create")
    assert (row.actor_type, row.actor_id, row.ip, row.request_id) == (
        "token",
        str(alice.token_row.pk),
        "192.0.2.7",
        "req-123",
    )


@pytest.mark.django_db(transaction=True)
def test_audit_record_refuses_to_run_outside_a_transaction(alice):
    with pytest.raises(RuntimeError):
        audit_record(actor=alice.actor, action="x")


@pytest.fixture
def row(alice):
    with transaction.atomic():
        return audit_record(actor=alice.actor, action="test.event", target=alice.org)


def test_the_orm_refuses_to_update_or_delete_audit_rows(row):
    row.action = "rewritten"
    with pytest.raises(AuditImmutable):
        row.save()
    with pytest.raises(AuditImmutable):
        row.delete()
    with pytest.raises(AuditImmutable):
        AuditEvent.objects.filter(pk=row.pk).update(action="rewritten")
    with pytest.raises(AuditImmutable):
        AuditEvent.objects.filter(pk=row.pk).delete()
    assert AuditEvent.objects.get(pk=row.pk).action == "test.event"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE audit_auditevent SET action = 'rewritten' WHERE id = %s",
        "DELETE FROM audit_auditevent WHERE id = %s",
    ],
)
def test_the_database_refuses_raw_update_and_delete(row, sql):
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [row.pk])
    assert AuditEvent.objects.get(pk=row.pk).action == "test.event"


def test_a_membership_change_is_only_visible_with_its_audit_row(alice):
    """Same transaction: if the audit insert failed, the change would roll back with it."""
    membership = member_add(actor=alice.actor, org=alice.org, email="x@acme.test")
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert AuditEvent.objects.filter(action="member.add", target_id=str(membership.pk)).count() == 1
