"""One Redis connection pool per process for Django's cache, shared by every thread.

Django builds a cache object per thread, and its Redis backend a connection pool per cache object, which it
never closes: in a worker of a thousand threads (one per running session) every thread that ever touched
the cache kept a Redis connection of its own. bench/density.py counted 0.4 Redis connections per waiting
session (212 for 500 sessions), all idle on a GET. A cache call answers in well under a millisecond, so a few
dozen connections serve every thread: the pool is a blocking one, where a thread finding them all in use
waits its turn (up to POOL_WAIT_S) instead of opening another. `CACHES["default"]["OPTIONS"]["pool_class"]`
names this class (settings.py).
"""

from __future__ import annotations

import threading
from typing import Any

import redis

MAX_CONNECTIONS = 64
POOL_WAIT_S = 20

_pools: dict[str, redis.BlockingConnectionPool] = {}
_lock = threading.Lock()


class SharedPool:
    """Stands in for redis.ConnectionPool where Django's RedisCacheClient asks for one (`from_url`)."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> redis.BlockingConnectionPool:
        with _lock:
            pool = _pools.get(url)
            if pool is None:
                pool = redis.BlockingConnectionPool.from_url(
                    url, max_connections=MAX_CONNECTIONS, timeout=POOL_WAIT_S, **options
                )
                _pools[url] = pool
            return pool
