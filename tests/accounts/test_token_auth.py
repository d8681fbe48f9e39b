"""Token authentication: digests only in the database, Bearer and Basic, expiry, revocation, last-used,
wrong tokens rejected with a clear 401 body, and verification under rotated peppers."""

import base64
from datetime import timedelta

from django.db import connection
from django.utils import timezone

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken
from hangar.accounts.token_services import token_create


def basic(token: str, username: str = "opencode") -> str:
    return "Basic " + base64.b64encode(f"{username}:{token}".encode()).decode()


def test_the_database_holds_only_the_digest_never_the_raw_token(alice):
    row, raw = token_create(actor=alice.actor, org=alice.org, user=alice.user, name="ci")
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken WHERE id = %s", [row.pk])
        stored = " ".join(str(value) for value in cursor.fetchone())
    assert raw not in stored and raw.split("_")[-1] not in stored
    assert row.digest == tokens.digest(raw) and row.prefix in stored


def test_bearer_and_basic_both_authenticate(api, alice):
    assert (
        api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {alice.token}").json()["email"] == "alice@acme.test"
    )
    assert api().get("/api/me", HTTP_AUTHORIZATION=basic(alice.token)).json()["email"] == "alice@acme.test"


def test_a_wrong_token_is_401_with_a_clear_body(api, alice):
    for header in (f"Bearer {alice.token}x", "Bearer hgr_nope_nope", "Bearer not-even-ours", basic("wrong")):
        response = api().get("/api/me", HTTP_AUTHORIZATION=header)
        assert response.status_code == 401
        assert response.json() == {"error": {"code": "authentication_failed", "message": "Invalid token."}}


def test_malformed_basic_credentials_are_401(api):
    response = api().get("/api/me", HTTP_AUTHORIZATION="Basic %%%not-base64")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Malformed Basic credentials."


def test_an_expired_token_is_401_saying_so(api, alice):
    ApiToken.objects.filter(pk=alice.token_row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = api(alice).get("/api/me")
    assert response.status_code == 401 and response.json()["error"]["message"] == "Token has expired."


def test_a_token_expiring_later_still_works(api, alice):
    ApiToken.objects.filter(pk=alice.token_row.pk).update(expires_at=timezone.now() + timedelta(hours=1))
    assert api(alice).get("/api/me").status_code == 200


def test_a_revoked_token_is_401_saying_so(api, alice):
    ApiToken.objects.filter(pk=alice.token_row.pk).update(revoked_at=timezone.now())
    response = api(alice).get("/api/me", HTTP_AUTHORIZATION=basic(alice.token))
    assert response.status_code == 401 and response.json()["error"]["message"] == "Token has been revoked."


def test_an_inactive_users_token_is_401(api, alice):
    alice.user.is_active = False
    alice.user.save()
    assert api(alice).get("/api/me").status_code == 401


def test_use_stamps_last_used_at(api, alice):
    assert ApiToken.objects.get(pk=alice.token_row.pk).last_used_at is None
    api(alice).get("/api/me")
    assert ApiToken.objects.get(pk=alice.token_row.pk).last_used_at is not None


def test_a_token_signed_with_an_older_pepper_still_verifies_after_rotation(api, alice, settings):
    settings.TOKEN_PEPPERS = ["old-pepper"]
    used, used_raw = token_create(actor=alice.actor, org=alice.org, user=alice.user, name="used")
    _idle, idle_raw = token_create(actor=alice.actor, org=alice.org, user=alice.user, name="idle")
    # Rotation: the new pepper goes first; the old one still verifies.
    settings.TOKEN_PEPPERS = ["new-pepper", "old-pepper"]
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {used_raw}").status_code == 200
    # Using it re-signed it under the new pepper.
    assert ApiToken.objects.get(pk=used.pk).digest == tokens.digest(used_raw, 0)
    new_row, new_raw = token_create(actor=alice.actor, org=alice.org, user=alice.user, name="new")
    assert new_row.digest == tokens.digest(new_raw, 0)
    # Once the old pepper is retired, only tokens unused since the rotation stop working.
    settings.TOKEN_PEPPERS = ["new-pepper"]
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {idle_raw}").status_code == 401
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {used_raw}").status_code == 200
    assert api().get("/api/me", HTTP_AUTHORIZATION=f"Bearer {new_raw}").status_code == 200


def test_last_used_at_is_written_at_most_once_a_minute(api, alice):
    from django.test.utils import CaptureQueriesContext

    def stamps() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert api(alice).get("/api/me").status_code == 200
        return sum('UPDATE "accounts_apitoken"' in q["sql"] for q in queries.captured_queries)

    assert stamps() == 1
    assert stamps() == 0  # within the minute
    ApiToken.objects.filter(pk=alice.token_row.pk).update(last_used_at=timezone.now() - timedelta(minutes=2))
    assert stamps() == 1


def test_the_token_comes_with_its_user_org_and_membership_in_one_query(alice, django_assert_num_queries):
    from hangar.accounts.authentication import resolve_token

    alice.org.permission_policy = [{"permission": "bash", "pattern": "*", "action": "ask"}]
    alice.org.save()
    ApiToken.objects.filter(pk=alice.token_row.pk).update(last_used_at=timezone.now())
    with django_assert_num_queries(1):
        token = resolve_token(alice.token)
        assert token.user == alice.user and token.org == alice.org
        assert token.membership == alice.membership and token.membership.role == "owner"
        assert token.org.permission_policy == [{"permission": "bash", "pattern": "*", "action": "ask"}]


def test_a_token_whose_user_left_its_org_still_authenticates_but_carries_no_membership(alice, bob):
    from hangar.accounts.authentication import resolve_token

    bob.membership.delete()
    assert resolve_token(bob.token).membership is None
