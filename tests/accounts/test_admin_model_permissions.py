"""Low: the user and group pages of the admin never fall back to Django's model permissions. Users span
orgs, so only a platform superuser manages them; a staff user who was granted `change_user` (directly or
through a group) gets nothing more than the tenant-scoped admin allows."""

import pytest
from django.contrib.auth.models import Group, Permission
from django.test import Client

from hangar.accounts.models import User


@pytest.fixture
def staff_with_every_model_permission(bob):
    user = bob.user
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["accounts", "auth"]))
    client = Client()
    client.force_login(User.objects.get(pk=user.pk))
    return client


def _user_form(user: User, **changes) -> dict:
    form = {
        "email": user.email,
        "name": user.name,
        "is_active": "on",
        "is_staff": "on",
        "date_joined_0": user.date_joined.strftime("%Y-%m-%d"),
        "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
    }
    form.update(changes)
    return form


def test_a_staff_user_with_change_user_cannot_make_himself_superuser(bob, staff_with_every_model_permission):
    client = staff_with_every_model_permission
    response = client.post(
        f"/admin/accounts/user/{bob.user.pk}/change/", _user_form(bob.user, is_superuser="on")
    )
    assert response.status_code == 403
    assert not User.objects.get(pk=bob.user.pk).is_superuser


def test_a_staff_user_with_user_permissions_cannot_read_add_or_delete_users(
    alice, charlie, staff_with_every_model_permission
):
    client = staff_with_every_model_permission
    assert client.get("/admin/accounts/user/").status_code == 403
    assert client.get(f"/admin/accounts/user/{charlie.user.pk}/change/").status_code in (302, 403)
    assert client.get("/admin/accounts/user/add/").status_code == 403
    added = client.post(
        "/admin/accounts/user/add/",
        {"email": "mole@evil.test", "password1": "x9!Kq#p2", "password2": "x9!Kq#p2"},
    )
    assert added.status_code == 403 and not User.objects.filter(email="mole@evil.test").exists()
    assert client.post(f"/admin/accounts/user/{charlie.user.pk}/delete/", {"post": "yes"}).status_code == 403
    assert User.objects.filter(pk=charlie.user.pk).exists()
    assert client.post(
        f"/admin/accounts/user/{charlie.user.pk}/password/", {"password1": "a", "password2": "a"}
    ).status_code in (302, 403, 404)
    assert User.objects.get(pk=charlie.user.pk).check_password("pw-charlie@globex.test")


def test_a_staff_user_with_group_permissions_cannot_manage_groups(staff_with_every_model_permission):
    client = staff_with_every_model_permission
    assert client.get("/admin/auth/group/add/").status_code == 403
    assert client.post("/admin/auth/group/add/", {"name": "escalate"}).status_code == 403
    assert not Group.objects.filter(name="escalate").exists()


def test_a_superuser_still_manages_users(alice):
    root = User.objects.create_superuser("root@hangar.test", "pw")
    client = Client()
    client.force_login(root)
    assert client.get("/admin/accounts/user/").status_code == 200
    response = client.post(
        f"/admin/accounts/user/{alice.user.pk}/change/", _user_form(alice.user, name="Alice A.")
    )
    assert response.status_code == 302 and User.objects.get(pk=alice.user.pk).name == "Alice A."
