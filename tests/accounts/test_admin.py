"""Django admin, tenant-safe for staff: superusers see all; other staff see only orgs they administer,
read-only; the audit log is read-only for everyone; token digests never show."""

import pytest
from django.test import Client

from hangar.accounts.models import Membership, Role, User
from hangar.audit.models import AuditEvent
from hangar.projects.services import project_create


@pytest.fixture
def staff_client():
    def make(user) -> Client:
        user.is_staff = True
        user.save()
        client = Client()
        client.force_login(user)
        return client

    return make


def test_a_superuser_sees_every_orgs_projects(alice, charlie):
    root = User.objects.create_superuser("root@hangar.test", "pw")
    client = Client()
    client.force_login(root)
    page = client.get("/admin/projects/project/").content.decode()
    assert "rocket" in page and "satellite" in page


def test_staff_owner_alice_sees_only_acme(alice, charlie, staff_client):
    client = staff_client(alice.user)
    page = client.get("/admin/projects/project/")
    assert page.status_code == 200
    assert "rocket" in page.content.decode() and "satellite" not in page.content.decode()
    assert client.get(f"/admin/projects/project/{charlie.project.pk}/change/").status_code in (302, 404)
    orgs = client.get("/admin/accounts/org/").content.decode()
    assert "acme" in orgs and "globex" not in orgs


def test_staff_member_bob_sees_nothing(bob, staff_client):
    assert staff_client(bob.user).get("/admin/projects/project/").status_code == 403


def test_staff_cannot_change_or_delete_through_the_admin(alice, staff_client):
    client = staff_client(alice.user)
    url = f"/admin/projects/project/{alice.project.pk}/delete/"
    assert client.post(url, {"post": "yes"}).status_code == 403
    assert alice.project.__class__.objects.filter(pk=alice.project.pk).exists()


def test_the_audit_log_is_read_only_even_for_superusers(alice):
    project_create(actor=alice.actor, org=alice.org, name="logged")
    event = AuditEvent.objects.latest("id")
    root = User.objects.create_superuser("root@hangar.test", "pw")
    client = Client()
    client.force_login(root)
    assert client.get(f"/admin/audit/auditevent/{event.pk}/change/").status_code == 200
    assert client.post(f"/admin/audit/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    assert client.get("/admin/audit/auditevent/add/").status_code == 403
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_token_pages_never_show_the_digest(alice, staff_client):
    page = staff_client(alice.user).get(f"/admin/accounts/apitoken/{alice.token_row.pk}/change/")
    assert page.status_code == 200
    assert alice.token_row.prefix in page.content.decode()
    assert alice.token_row.digest not in page.content.decode()


def test_a_superuser_admin_edit_is_audited(alice):
    root = User.objects.create_superuser("root@hangar.test", "pw")
    client = Client()
    client.force_login(root)
    membership = Membership.objects.get(pk=alice.membership.pk)
    response = client.post(
        f"/admin/accounts/membership/{membership.pk}/change/",
        {"org": alice.org.pk, "user": alice.user.pk, "role": Role.ADMIN},
    )
    assert response.status_code == 302
    row = AuditEvent.objects.filter(action="admin.membership.change").get()
    assert row.actor_label == "admin:root@hangar.test" and row.data == {"fields": ["role"]}


def test_the_admin_login_page_renders(db):
    assert Client().get("/admin/login/").status_code == 200
