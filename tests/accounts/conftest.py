from tests.foundation_fixtures import _fast_password_hashing, _fresh_throttles, dave, fresh_ip_client  # noqa: F401
