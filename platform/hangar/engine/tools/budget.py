"""A bound on the CPU a tool spends in the worker. The worker's threads are shared by every session it
carries, and a tool's arguments and files come from a model: matching an oldString against a huge file
must end, and must end when the run is aborted.

`within(seconds, abort)` sets the bound for the code it wraps (on this thread); the loops of the pure
matching functions call `tick()`, which raises `OutOfTime` once the deadline passes and `Aborted` once the
run's abort is set. Outside `within`, `tick()` does nothing: the pure functions stay usable alone."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

TOOL_CPU_S = 10.0  # a tool's own work in the worker (matching, diffing), not its time in the sandbox

_local = threading.local()


class OutOfTime(Exception):
    """The tool's work passed its deadline; the message is for the model."""


class Aborted(Exception):
    """The run was aborted while the tool was working."""


@contextmanager
def within(seconds: float = TOOL_CPU_S, abort: threading.Event | None = None) -> Iterator[None]:
    previous = getattr(_local, "bound", None)
    _local.bound = (time.monotonic() + seconds, abort, seconds)
    try:
        yield
    finally:
        _local.bound = previous


def tick() -> None:
    bound = getattr(_local, "bound", None)
    if bound is None:
        return
    deadline, abort, seconds = bound
    if abort is not None and abort.is_set():
        raise Aborted("aborted")
    if time.monotonic() > deadline:
        raise OutOfTime(f"gave up after {seconds:g} s of matching")
