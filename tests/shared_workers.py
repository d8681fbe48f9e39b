"""The engine workers that consecutive tests of a module share (`worker`, `hooks_worker`: tests/engine/conftest.py).

A worker's start (Django, LiteLLM, the tool schemas) costs seconds of CPU; started once per run of tests that
ask for one instead of once per test, the ~140 starts of a full run became a few dozen. Each test's sessions,
org and scripts are its own, and the transactional tests flush the database between tests, so a shared worker
sees nothing of the previous test but its warm pool.

A shared worker is alive only while tests that ask for it run: before any other test (one that starts workers
of its own, kills them, or wants none consuming the queue) it is stopped (tests/conftest.py), as each test's
worker was stopped after it before. It is keyed by the whole environment it would inherit, so a test that
sets a variable before asking for it gets a worker that has it; one that died is started again."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

# The fixtures that hand out a shared worker.
FIXTURES = frozenset({"worker", "hooks_worker", "module_workers"})

_shared: dict[tuple[tuple[str, str], ...], Any] = {}


def environment_key(env: dict[str, str] | None) -> tuple[tuple[str, str], ...]:
    """What a process started now with `env` on top of this one's environment would inherit."""
    inherited = {name: value for name, value in os.environ.items() if name != "PYTEST_CURRENT_TEST"}
    return tuple(sorted({**inherited, **(env or {})}.items()))


def get(env: dict[str, str] | None, start: Callable[[], Any]) -> Any:
    """The running worker for `env` on top of this process's environment, started with `start` if none is."""
    key = environment_key(env)
    worker = _shared.get(key)
    if worker is None or worker.proc.poll() is not None:
        if worker is not None:
            worker.stop()
        worker = _shared[key] = start()
    return worker


def stop_all() -> None:
    while _shared:
        _, worker = _shared.popitem()
        worker.stop()


# Servers a test process keeps across modules (the default `daphne`, tests/opencode/live.py), by key.
servers: dict[tuple[tuple[str, str], ...], Any] = {}


def stop_servers() -> None:
    while servers:
        _, server = servers.popitem()
        server.stop()
