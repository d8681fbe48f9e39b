"""Members: everyone in the org reads the list; admins add/change/remove; only owners touch owners;
the last owner stays."""

from hangar.accounts.models import Membership, Role, User


def test_alice_bob_and_dave_all_list_acme_members(api, alice, bob, dave):
    for persona in (alice, bob, dave):
        response = api(persona).get("/api/orgs/acme/members/")
        assert response.status_code == 200
        assert {m["email"] for m in response.json()} == {"alice@acme.test", "bob@acme.test", "dave@acme.test"}


def test_alice_adds_a_new_user_by_email_with_an_unusable_password(api, alice):
    response = api(alice).post(
        "/api/orgs/acme/members/", {"email": "Eve@Acme.test", "role": "viewer"}, format="json"
    )
    assert response.status_code == 201
    assert response.json()["email"] == "eve@acme.test" and response.json()["role"] == "viewer"
    assert not User.objects.get(email="eve@acme.test").has_usable_password()


def test_alice_invites_an_existing_user_from_another_org_instead_of_adding_them(api, alice, charlie):
    """An existing account joins only by accepting (tests/console/test_sso_domains.py says why)."""
    response = api(alice).post("/api/orgs/acme/members/", {"email": charlie.user.email}, format="json")
    assert response.status_code == 202 and response.json()["invited"] is True
    assert not Membership.objects.filter(org=alice.org, user=charlie.user).exists()


def test_adding_an_existing_member_again_is_a_400_naming_email(api, alice, bob):
    response = api(alice).post("/api/orgs/acme/members/", {"email": bob.user.email}, format="json")
    assert response.status_code == 400
    assert "email" in response.json()["error"]["fields"]


def test_bob_and_dave_cannot_add_members(api, bob, dave):
    for persona in (bob, dave):
        response = api(persona).post("/api/orgs/acme/members/", {"email": "x@acme.test"}, format="json")
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"


def test_alice_promotes_bob_to_admin(api, alice, bob):
    response = api(alice).patch(
        f"/api/orgs/acme/members/{bob.membership.pk}", {"role": "admin"}, format="json"
    )
    assert response.status_code == 200 and response.json()["role"] == "admin"


def test_an_admin_cannot_grant_or_take_the_owner_role(api, alice, bob):
    Membership.objects.filter(pk=bob.membership.pk).update(role=Role.ADMIN)
    grant = api(bob).patch(f"/api/orgs/acme/members/{bob.membership.pk}", {"role": "owner"}, format="json")
    demote = api(bob).patch(
        f"/api/orgs/acme/members/{alice.membership.pk}", {"role": "member"}, format="json"
    )
    remove = api(bob).delete(f"/api/orgs/acme/members/{alice.membership.pk}")
    assert (grant.status_code, demote.status_code, remove.status_code) == (403, 403, 403)
    assert Membership.objects.get(pk=alice.membership.pk).role == Role.OWNER


def test_the_last_owner_can_be_neither_demoted_nor_removed(api, alice):
    demote = api(alice).patch(
        f"/api/orgs/acme/members/{alice.membership.pk}", {"role": "admin"}, format="json"
    )
    leave = api(alice).delete(f"/api/orgs/acme/members/{alice.membership.pk}")
    assert demote.status_code == 400 and "role" in demote.json()["error"]["fields"]
    assert leave.status_code == 400 and "role" in leave.json()["error"]["fields"]


def test_a_second_owner_lets_the_first_step_down(api, alice, bob):
    assert (
        api(alice)
        .patch(f"/api/orgs/acme/members/{bob.membership.pk}", {"role": "owner"}, format="json")
        .status_code
        == 200
    )
    assert (
        api(alice)
        .patch(f"/api/orgs/acme/members/{alice.membership.pk}", {"role": "member"}, format="json")
        .status_code
        == 200
    )


def test_alice_removes_bob_and_his_acme_tokens_stop_working(api, alice, bob):
    assert api(alice).delete(f"/api/orgs/acme/members/{bob.membership.pk}").status_code == 204
    assert not Membership.objects.filter(pk=bob.membership.pk).exists()
    assert api(bob).get("/api/me").status_code == 401


def test_bob_may_leave_but_not_remove_others(api, alice, bob, dave):
    assert api(bob).delete(f"/api/orgs/acme/members/{dave.membership.pk}").status_code == 403
    assert api(bob).delete(f"/api/orgs/acme/members/{bob.membership.pk}").status_code == 204


def test_a_bad_role_is_a_400_naming_role(api, alice, bob):
    response = api(alice).patch(f"/api/orgs/acme/members/{bob.membership.pk}", {"role": "god"}, format="json")
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == ["role"]


def test_each_persona_reads_a_single_member(api, alice, bob, dave, charlie):
    url = f"/api/orgs/acme/members/{bob.membership.pk}"
    assert [api(p).get(url).status_code for p in (alice, bob, dave, charlie)] == [200, 200, 200, 404]
