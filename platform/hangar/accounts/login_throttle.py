"""The login throttle, shared by the API login and the Django admin's login page. Each attempt counts
against two budgets in a fixed window: the real client address (X-Forwarded-For only behind the proxies
the operator declares, `client_ip`) and the account named (so spreading guesses over many addresses does
not help). Either budget spent refuses the attempt, right password or not, until the window ends."""

import hashlib
import time

from django.conf import settings
from django.core.cache import cache

from hangar.accounts.actors import client_ip


def _count(kind: str, who: str, window: int) -> int:
    digest = hashlib.sha256(who.encode()).hexdigest()[:32]
    # "throttle_" in the key: the test fixtures clear every throttle counter between tests.
    key = f"login_throttle_{kind}_{digest}_{int(time.time() // window)}"
    cache.add(key, 0, timeout=window + 1)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=window + 1)
        return 1


def login_wait(request, email: str) -> int:
    """Count one login attempt for `email` from this request's client; the seconds it must wait before
    trying again (0: go ahead)."""
    window = settings.HANGAR_LOGIN_WINDOW_S
    by_address = _count("addr", client_ip(request) or "unknown", window)
    by_account = _count("acct", email.strip().lower(), window)
    if (
        by_address > settings.HANGAR_LOGIN_MAX_PER_ADDRESS
        or by_account > settings.HANGAR_LOGIN_MAX_PER_ACCOUNT
    ):
        return max(1, int(window - time.time() % window))
    return 0
