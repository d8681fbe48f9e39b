"""The order in which a parallel run (deploy/test.sh: pytest-xdist, `--dist loadfile`) hands out test files:
the longest first, from the seconds each file took in a recorded full run (tests/durations.json). xdist
hands a file to whichever process is free next, in collection order once `--no-loadscope-reorder` is given
(by default it orders files by their number of tests); longest first is the classic rule for that
(LPT), and no long file then starts near the end and runs alone while the other processes stand idle.

`HANGAR_TEST_DURATIONS_OUT=tests/durations.json` on a full run (`make durations`) records the figures
anew. A file not recorded yet counts as the recorded median. tests/conftest.py calls `order` from its
pytest_collection_modifyitems hook and `record` from pytest_runtest_logreport."""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
OUT = "HANGAR_TEST_DURATIONS_OUT"

_seconds: dict[str, float] = defaultdict(float)


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def order(items: list[pytest.Item]) -> None:
    """Sort `items` in place: files by recorded seconds, longest first; a file's own tests keep their order."""
    try:
        recorded: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    if not recorded:
        return
    unknown = statistics.median(recorded.values())
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        first.setdefault(_file(item.nodeid), index)
    items.sort(key=lambda item: (-recorded.get(_file(item.nodeid), unknown), first[_file(item.nodeid)]))


def record(report: pytest.TestReport) -> None:
    """Add a phase's seconds to its file (in the controlling process, xdist's reports included)."""
    if os.environ.get(OUT):
        _seconds[_file(report.nodeid)] += report.duration


def write(session: pytest.Session) -> None:
    """After a run with HANGAR_TEST_DURATIONS_OUT set, in the controlling process: the seconds per file."""
    out = os.environ.get(OUT)
    if not out or os.environ.get("PYTEST_XDIST_WORKER") or not _seconds:
        return
    figures = {name: round(seconds, 1) for name, seconds in sorted(_seconds.items())}
    Path(out).write_text(json.dumps(figures, indent=1) + "\n")
