"""Personas for the admin console's endpoints: erin, an auditor of acme (tests/usage/conftest.py), and dave,
a viewer, beside alice (owner), bob (member) and charlie (owner of globex)."""

from tests.foundation_fixtures import _fast_password_hashing, _fresh_throttles, dave, fresh_ip_client  # noqa: F401
from tests.usage.conftest import erin  # noqa: F401
