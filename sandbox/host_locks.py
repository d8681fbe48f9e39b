"""Host-wide locks: an exclusive flock on a file of the sandbox root's `locks/` folder, so that every process
of the host (workers, host services, web processes) takes the same one. The file stays; the lock goes with
its descriptor, when the holder leaves the block or dies."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager

from sandbox import volumes


def _open(name: str) -> int:
    path = volumes.ROOT / "locks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)


@contextmanager
def held(name: str) -> Iterator[None]:
    """Wait for the lock `name` and hold it for the block."""
    fd = _open(name)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def held_if_free(name: str) -> Iterator[bool]:
    """Hold the lock `name` for the block if no one does: True then; False (at once) if another holds it."""
    fd = _open(name)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)
