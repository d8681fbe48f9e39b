"""Fault suite rig: the engine's real worker processes and scripted LLM (tests/engine/conftest.py), plus
private Redis and Postgres instances that a test may restart (tests/private_services.py); the machine's
shared services are never touched."""

import pytest
from asgiref.sync import SyncToAsync
from django.db import connections

# Every fixture of the engine rig, by star: a fixture it adds (or one of its fixtures comes to need) is
# found here too, without this list having to follow.
from tests.engine.conftest import *  # noqa: F403


@pytest.fixture(autouse=True)
def close_async_db_connections():
    """The stream checks reach the database from asgiref's shared sync thread: close its connections after
    each test so the test database can be dropped at the end."""
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
