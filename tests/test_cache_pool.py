"""Django's cache in a threaded worker: every thread's cache object draws on one Redis pool per process,
bounded, so a thousand threads that each touched the cache do not each keep a Redis connection."""

from __future__ import annotations

import threading

import pytest
from django.core.cache import caches

from hangar import cache_pool

pytestmark = pytest.mark.db


def _pool():
    return caches["default"]._cache._get_connection_pool(write=True)


def test_two_hundred_threads_share_one_bounded_pool_and_every_get_answers():
    caches["default"].set("cache-pool-test", "here", 60)
    pools, answers, errors = [], [], []
    start = threading.Barrier(200)

    def one() -> None:
        try:
            start.wait()
            answers.append(caches["default"].get("cache-pool-test"))
            pools.append(_pool())
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(200)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert errors == [] and answers == ["here"] * 200
    assert len({id(p) for p in pools}) == 1 and pools[0] is _pool()
    assert isinstance(pools[0], cache_pool.redis.BlockingConnectionPool)
    # Connections made, not one per thread: at most the pool's bound.
    assert len(pools[0]._connections) <= cache_pool.MAX_CONNECTIONS
