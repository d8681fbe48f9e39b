import pytest
from asgiref.sync import SyncToAsync
from django.db import connections


@pytest.fixture(autouse=True)
def close_async_db_connections():
    """Async tests and consumers reach the database from asgiref's shared sync thread; close that
    thread's connections after each test so the test database can be dropped at the end."""
    yield
    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
