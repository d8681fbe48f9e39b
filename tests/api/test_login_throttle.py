"""M2: the login throttle counts per account and real client address, and per address, trusts X-Forwarded-For only
behind the proxies the operator declares (HANGAR_TRUSTED_PROXY_HOPS), and covers /admin/login/ too."""

from django.test import Client
from rest_framework.test import APIClient

from hangar.accounts.models import User


def api_login(client, email="alice@acme.test", password="wrong", **headers):
    return client.post("/api/auth/login", {"email": email, "password": password}, format="json", **headers)


def test_m2_a_forged_forwarded_for_does_not_reset_the_login_throttle(alice, settings):
    settings.HANGAR_TRUSTED_PROXY_HOPS = 0
    client = APIClient(REMOTE_ADDR="10.77.0.1")
    statuses = [
        api_login(client, email=f"nobody{i}@acme.test", HTTP_X_FORWARDED_FOR=f"6.6.{i}.6").status_code
        for i in range(21)
    ]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429


def test_m2_behind_a_trusted_proxy_the_real_client_address_is_throttled(alice, settings):
    settings.HANGAR_TRUSTED_PROXY_HOPS = 1
    proxy = APIClient(REMOTE_ADDR="10.77.0.2")
    # The client forges the left part; the proxy appends the address it saw (203.0.113.5).
    statuses = [
        api_login(
            proxy, email=f"nobody{i}@acme.test", HTTP_X_FORWARDED_FOR=f"6.6.{i}.6, 203.0.113.5"
        ).status_code
        for i in range(21)
    ]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    # Another client behind the same proxy has its own budget.
    other = api_login(proxy, email="nobody@acme.test", HTTP_X_FORWARDED_FOR="203.0.113.6")
    assert other.status_code == 401


def test_one_account_from_one_address_is_throttled(alice):
    client = APIClient(REMOTE_ADDR="10.78.0.1")
    statuses = [api_login(client).status_code for _ in range(21)]
    assert statuses[:20] == [401] * 20 and statuses[20] == 429
    # Even the right password waits for the window; the email's case does not open a new budget.
    right = api_login(client, email="Alice@Acme.test", password="pw-alice@acme.test")
    assert right.status_code == 429 and int(right["Retry-After"]) > 0


def test_anyone_spending_an_accounts_budget_does_not_lock_its_owner_out(alice, settings):
    """Low: the budget was the account's alone, so anyone naming alice 20 times locked her out everywhere.
    It is the account's per address now: the guesser waits, alice (another address) signs in."""
    settings.HANGAR_LOGIN_MAX_PER_ADDRESS = 1000
    for i in range(4):
        guesser = APIClient(REMOTE_ADDR=f"10.78.2.{i + 1}")
        statuses = [api_login(guesser).status_code for _ in range(21)]
        assert statuses[:20] == [401] * 20 and statuses[20] == 429
    owner = api_login(APIClient(REMOTE_ADDR="10.78.3.1"), password="pw-alice@acme.test")
    assert owner.status_code == 200, owner.content


def test_m2_the_admin_login_is_throttled(db):
    User.objects.create_superuser("root@hangar.test", "pw-root")
    client = Client(REMOTE_ADDR="10.79.0.1")
    statuses = [
        client.post("/admin/login/", {"username": "root@hangar.test", "password": "wrong"}).status_code
        for _ in range(21)
    ]
    assert statuses[:20] == [200] * 20 and statuses[20] == 429
    refused = client.post("/admin/login/", {"username": "root@hangar.test", "password": "pw-root"})
    assert refused.status_code == 429 and "_auth_user_id" not in client.session


def test_m2_admin_and_api_logins_share_one_account_budget(alice):
    for _ in range(20):
        Client(REMOTE_ADDR="10.80.0.1").post(
            "/admin/login/", {"username": "alice@acme.test", "password": "wrong"}
        )
    assert api_login(APIClient(REMOTE_ADDR="10.80.0.1")).status_code == 429


def test_m2_the_admin_login_page_still_signs_a_superuser_in(db):
    User.objects.create_superuser("root@hangar.test", "pw-root")
    client = Client(REMOTE_ADDR="10.81.0.1")
    response = client.post(
        "/admin/login/?next=/admin/", {"username": "root@hangar.test", "password": "pw-root"}
    )
    assert response.status_code == 302 and client.get("/admin/").status_code == 200


def test_the_budget_cannot_be_spent_twice_across_a_window_boundary(alice, settings, monkeypatch):
    # 20 attempts in the last seconds of one window, then the first seconds of the next: a fixed window
    # would open a fresh budget of 20; these 20 still count until they are a window old.
    from hangar.accounts import login_throttle

    settings.HANGAR_LOGIN_WINDOW_S = 60
    clock = [60 * 1000 + 58.0]
    monkeypatch.setattr(login_throttle.time, "time", lambda: clock[0])
    client = APIClient(REMOTE_ADDR="10.79.0.1")
    assert [api_login(client, email=f"n{i}@acme.test").status_code for i in range(20)] == [401] * 20
    clock[0] += 4  # 2 s into the next window
    refused = api_login(client, email="n20@acme.test")
    assert refused.status_code == 429 and int(refused["Retry-After"]) == 58  # to the next window
    clock[0] += 58  # the next window: the 20 are two windows old, only the refused attempt counts
    assert api_login(client, email="n21@acme.test").status_code == 401
