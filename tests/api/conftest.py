from tests.foundation_fixtures import _fresh_throttles, dave, fresh_ip_client  # noqa: F401
from tests.question_fixtures import asked, no_enqueue  # noqa: F401  (fixtures: a pending question)
from tests.sso_fixtures import dns, provider_server  # noqa: F401  (an OpenID provider, a DNS server)
