"""Personas for the admin console's endpoints: erin, an auditor of acme (tests/usage/conftest.py), and dave,
a viewer, beside alice (owner), bob (member) and charlie (owner of globex)."""

import pytest
import redis

from tests.foundation_fixtures import _fresh_throttles, dave, fresh_ip_client  # noqa: F401
from tests.sso_fixtures import dns, provider_server  # noqa: F401  (an OpenID provider, a DNS server)
from tests.usage.conftest import erin  # noqa: F401


@pytest.fixture(autouse=True)
def _fresh_sso_cache(settings):
    """A provider's cached discovery and keys live in Redis and outlive a run; the tests' providers listen on
    random ports, which repeat."""
    client = redis.Redis.from_url(settings.REDIS_URL)
    for key in client.scan_iter("hangar:*sso_meta_*"):
        client.delete(key)
