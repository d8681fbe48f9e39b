"""Fixtures shared by the foundation tests (api, accounts, projects, audit; each conftest imports them):
a viewer persona (dave), a client from a fresh IP (throttles key on IP), and a clean slate of throttle
counters in the shared Redis cache."""

import uuid

import pytest
import redis
from rest_framework.test import APIClient

from hangar.accounts import tokens
from hangar.accounts.models import ApiToken, Membership, Role, User


@pytest.fixture(autouse=True)
def _fresh_throttles(settings):
    """Throttle counters live in Redis and outlive a test database (user ids repeat between runs). The
    login throttle counts in fixed windows: a test whose attempts straddle a window's end would see its
    count start again (a clean-clone run at d5d2267 failed so once), so tests count in a day-long one."""
    settings.HANGAR_LOGIN_WINDOW_S = 24 * 3600
    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in client.scan_iter("hangar:*throttle_*"):
        client.delete(key)
    yield


@pytest.fixture
def dave(acme, alice):
    """A viewer of acme."""
    from tests.conftest import Persona

    user = User.objects.create_user("dave@acme.test", password="pw-dave")
    membership = Membership.objects.create(org=acme, user=user, role=Role.VIEWER)
    raw, prefix = tokens.generate()
    row = ApiToken.objects.create(org=acme, user=user, name="test", prefix=prefix, digest=tokens.digest(raw))
    return Persona(user, acme, membership, alice.project, raw, row)


@pytest.fixture
def fresh_ip_client():
    def make() -> APIClient:
        return APIClient(
            REMOTE_ADDR=f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"
        )

    return make
