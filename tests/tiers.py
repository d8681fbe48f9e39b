"""Test tiers (pyproject [tool.pytest.ini_options] markers): every collected test gets exactly one of
`fast`, `db`, `docker` and `browser`, from what it uses, so a new test is classified without anyone
remembering to mark it. tests/conftest.py calls `classify` from its pytest_collection_modifyitems hook.

- browser: real Chromium (the web app's fixtures), and everything that comes with it.
- docker: the Docker engine: a sandbox, or a Celery worker (an engine worker starts sandboxes), or the
  clean-up of a session's sandbox.
- db: the machine's real services or a process of the test's own, but no Docker: the Postgres test
  database or Redis, a worker-less server process, a command it runs.
- fast: in this process only, in seconds: no database or Redis, no Docker, no browser, no subprocess. A
  fast test runs with Docker unreachable (conftest's `_fast_tier_guard` points DOCKER_HOST nowhere around
  it; `make test-fast` does so for the whole run) and pytest-django refuses it the database.

A tier marker written on a test (or its module, `pytestmark`) wins over the guess: the in-process loop
(tests/engine/fast) is marked `fast` by hand: it runs against the real Postgres, inside the test's own
rolled-back transaction, and the Redis cache, but needs nothing else: no worker, no Docker, no server.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TIERS = ("fast", "db", "docker", "browser")

BROWSER_FIXTURES = frozenset({"chromium", "open_app"})
# The sandbox fixtures (tests/sandbox, tests/engine/tools), every Celery worker fixture (a worker runs the
# engine, whose sessions start sandboxes) and `sessions_made`, whose teardown destroys sandboxes.
DOCKER_FIXTURES = frozenset(
    {
        "docker_client",
        "image",
        "sandboxes",
        "box",
        "shared_box",
        "new_session_id",
        "docker_sandboxes",
        "docker_box",
        "docker",
        "start_worker",
        "module_workers",
        "worker",
        "live_worker",
        "hooks_worker",
        "hq_worker",
        "slack_worker",
        "sessions_made",
        "make_session",
        "host_b",
    }
)
# pytest-django's database fixtures (its autouse `django_db_blocker` is in every test and grants nothing),
# the ones that clear keys in the shared Redis, and the ones that start a server process of their own.
DB_FIXTURES = frozenset(
    {
        "_fresh_throttles",
        "_fresh_sso_cache",
        "db",
        "transactional_db",
        "django_db_setup",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
        "daphne",
        "private_redis",
        "private_postgres",
    }
)

TESTS = Path(__file__).resolve().parent
# Directories whose every test needs the tier, whatever its fixtures say: the sandbox suite drives real
# containers (some through helpers, not fixtures), the fault suite kills workers and sandboxes.
DIRECTORY_TIERS = {TESTS / "web": "browser", TESTS / "sandbox": "docker", TESTS / "faults": "docker"}


def written_tier(item: pytest.Item) -> str | None:
    """The tier marked on the test itself (or its module or class), if any."""
    marked = [tier for tier in TIERS if item.get_closest_marker(tier) is not None]
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid}: more than one tier marked ({', '.join(marked)})")
    return marked[0] if marked else None


def guessed_tier(item: pytest.Item) -> str:
    """The tier of an unmarked test, from its fixtures (all it requests, directly or not), its directory
    and its module."""
    fixtures = set(getattr(item, "fixturenames", ()))
    path = Path(str(item.fspath)).resolve()
    by_directory = next((tier for root, tier in DIRECTORY_TIERS.items() if root in path.parents), None)
    if fixtures & BROWSER_FIXTURES or by_directory == "browser":
        return "browser"
    if fixtures & DOCKER_FIXTURES or by_directory == "docker":
        return "docker"
    if fixtures & DB_FIXTURES or item.get_closest_marker("django_db") is not None:
        return "db"
    # A module that imports subprocess runs a command or a server of its own: not in-process.
    module = getattr(item, "module", None)
    if module is not None and hasattr(module, "subprocess"):
        return "db"
    return "fast"


def classify(items: list[pytest.Item]) -> None:
    for item in items:
        if written_tier(item) is None:
            item.add_marker(getattr(pytest.mark, guessed_tier(item)))
