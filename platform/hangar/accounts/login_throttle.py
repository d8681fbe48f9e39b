"""The login throttle, shared by the API login, the Django admin's login page and the SSO start. Each attempt
counts against two budgets: the real client address (X-Forwarded-For only behind the proxies the operator
declares, `client_ip`), and the account named from that address. Either budget spent refuses the attempt,
right password or not. The account's budget is per address: an account-wide one let anyone who names an
account lock its owner out everywhere (tests/api/test_login_throttle.py); guesses spread over many
addresses each spend that address's own budget.

The budget holds for any `window` seconds: an attempt counts in the current fixed window and is weighed
with the previous window's count too. A fixed window alone let a client spend its budget at the end of one
window and again at the start of the next (twice the budget in a moment). The price is that a client who
spent it all waits until its attempts are a whole window old (at most two windows)."""

import hashlib
import math
import time

from django.conf import settings
from django.core.cache import cache

from hangar.accounts.actors import client_ip


def _key(kind: str, digest: str, slot: int) -> str:
    # "throttle_" in the key: the test fixtures clear every throttle counter between tests.
    return f"login_throttle_{kind}_{digest}_{slot}"


def _count(kind: str, who: str, window: int, now: float) -> tuple[int, int]:
    """This attempt counted: (attempts in the current fixed window, attempts in the previous one)."""
    digest = hashlib.sha256(who.encode()).hexdigest()[:32]
    slot = int(now // window)
    key = _key(kind, digest, slot)
    cache.add(key, 0, timeout=2 * window + 1)  # kept while it is the previous window too
    try:
        current = cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=2 * window + 1)
        current = 1
    return current, cache.get(_key(kind, digest, slot - 1), 0)


def _wait(current: int, previous: int, budget: int, window: int, now: float) -> int:
    """Seconds until an attempt fits the budget again (0: this one does)."""
    if current + previous <= budget:
        return 0
    to_next = window - now % window  # then the current window is the previous one
    return max(1, math.ceil(to_next + (window if current >= budget else 0)))


def login_wait(request, email: str) -> int:
    """Count one login attempt for `email` from this request's client; the seconds it must wait before
    trying again (0: go ahead)."""
    window, now = settings.HANGAR_LOGIN_WINDOW_S, time.time()
    address = client_ip(request) or "unknown"
    by_address = _count("addr", address, window, now)
    by_account = _count("acct", f"{email.strip().lower()}\n{address}", window, now)
    return max(
        _wait(*by_address, settings.HANGAR_LOGIN_MAX_PER_ADDRESS, window, now),
        _wait(*by_account, settings.HANGAR_LOGIN_MAX_PER_ACCOUNT, window, now),
    )
