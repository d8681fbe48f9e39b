from tests.foundation_fixtures import _fresh_throttles, dave, fresh_ip_client  # noqa: F401
