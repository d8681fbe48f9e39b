"""Loaded as a pytest plugin (pyproject addopts `-p tests.envdefaults`), before Django reads its settings:
the environment the tests need and production must not have by default. The scripted LLM server and
every canned server in the tests listen on 127.0.0.1, which model endpoints may reach only when the
operator allows it (hangar.netguard); worker processes the tests start inherit it.

The run's own Celery queue is chosen here too: the engine's and the integrations' task routes read
HANGAR_ENGINE_QUEUE when their tasks modules are imported, and in a full run a test module collected
before tests/engine/conftest.py imports them first. Chosen there, the integrations' routes pointed at the
default queue, which no test worker consumes: the test process's webhook fan-outs were never delivered."""

import os
import uuid

os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
os.environ.setdefault("HANGAR_SSO_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
os.environ.setdefault("HANGAR_ENGINE_QUEUE", f"engine-test-{uuid.uuid4().hex[:8]}")
