"""Loaded as a pytest plugin (pyproject addopts `-p tests.envdefaults`), before Django reads its settings:
the environment the tests need and production must not have by default. The scripted LLM server and
every canned server in the tests listen on 127.0.0.1, which model endpoints may reach only when the
operator allows it (hangar.netguard); worker processes the tests start inherit it."""

import os

os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
