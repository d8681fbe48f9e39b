"""Loaded as a pytest plugin (pyproject addopts `-p tests.envdefaults`), before Django reads its settings:
the environment the tests need and production must not have by default. The scripted LLM server and
every canned server in the tests listen on 127.0.0.1, which model endpoints may reach only when the
operator allows it (hangar.netguard); worker processes the tests start inherit it.

The run's own Celery queue is chosen here too: the engine's and the integrations' task routes read
HANGAR_ENGINE_QUEUE when their tasks modules are imported, and in a full run a test module collected
before tests/engine/conftest.py imports them first. Chosen there, the integrations' routes pointed at the
default queue, which no test worker consumes: the test process's webhook fan-outs were never delivered.

Under pytest-xdist (`-n N`, deploy/test.sh) every test process gets a sandbox root and a Redis database
of its own (pytest-django already gives it its own test database): host-local sandbox state (volumes,
registry, attach locks, the warm pool, whose containers are labelled by root) and Redis keys (throttle
counters, the channel layer, Celery queues) never cross between processes running side by side."""

import os
import re
import uuid

os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
os.environ.setdefault("HANGAR_SSO_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
os.environ.setdefault("HANGAR_MCP_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
os.environ.setdefault("HANGAR_ENGINE_QUEUE", f"engine-test-{uuid.uuid4().hex[:8]}")
# The workers and `up`s the tests start skip Django's system checks, which Celery runs as a worker starts
# (CPU and a delay before it takes tasks, at each of a run's many worker starts). The checks still run in
# every run of the suite (deploy/setup.sh's migrate). Production workers keep them: whether skipping them
# slows a cold sandbox start (as a few bench runs suggested) is not settled (a77fa23, the stop 36 note).
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker:
    _index = int(re.sub(r"\D", "", _xdist_worker) or 0)
    _base_root = os.environ.get("HANGAR_SANDBOX_ROOT", "/var/lib/hangar")
    os.environ["HANGAR_SANDBOX_ROOT"] = f"{_base_root.rstrip('/')}-{_xdist_worker}"
    _redis = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    _base_db = int(m.group(1)) if (m := re.search(r"/(\d+)$", _redis)) else 0
    # Redis keeps 16 databases (0-15) by default: worker i takes base + 1 + i, wrapping inside them.
    _db = (_base_db + 1 + _index) % 16
    # Only REDIS_URL: settings derive the broker from it. CELERY_BROKER_URL in the environment would
    # override every app.conf.broker_url a test sets (Celery reads that variable first).
    os.environ["REDIS_URL"] = re.sub(r"(/\d+)?$", f"/{_db}", _redis, count=1)
    # Pub/Sub (the channel layer) ignores the database number: a prefix of its own per process.
    os.environ["HANGAR_CHANNEL_PREFIX"] = f"asgi-{_xdist_worker}"
