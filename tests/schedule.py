"""The order in which a parallel run (deploy/test.sh: pytest-xdist, `--dist loadfile`) hands out test files:
the longest first, from the seconds each file took in a recorded full run (tests/durations.json). xdist
hands a file to whichever process is free next, in collection order once `--no-loadscope-reorder` is given
(by default it orders files by their number of tests); longest first is the classic rule for that
(LPT), and no long file then starts near the end and runs alone while the other processes stand idle.

Files that share a machine-wide resource one of them breaks on purpose run in one process, one after the
other, as one unit of work (GROUPS): the tests of host B (tests/sandbox/hostb.py, a second dockerd every
test process uses) beside test_host_loss_two_hosts, which kills B's dockerd mid-step. Side by side in
two processes, that kill failed another file's B clean-up (seen in a full run). A file that asks for
`host_b` and is not in its group is refused at collection, so the list cannot fall behind.

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
from xdist.scheduler import LoadFileScheduling

DURATIONS = Path(__file__).with_name("durations.json")
OUT = "HANGAR_TEST_DURATIONS_OUT"

_seconds: dict[str, float] = defaultdict(float)

HOST_B = "host B"
GROUPS = {
    "tests/engine/test_drain_moves_workspaces.py": HOST_B,
    "tests/engine/test_host_loss_two_hosts.py": HOST_B,
    "tests/engine/test_two_hosts.py": HOST_B,
    "tests/engine/test_two_hosts_caps.py": HOST_B,
    "tests/sandbox/test_host_b.py": HOST_B,
    "tests/sandbox/test_workspace_move.py": HOST_B,
}


def _file(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its group, else its file."""
    return GROUPS.get(_file(nodeid), _file(nodeid))


class Scheduling(LoadFileScheduling):
    """xdist's `--dist loadfile`, with the files of a group handed out as one unit."""

    def _split_scope(self, nodeid: str) -> str:
        return unit(nodeid)


def check_groups(items: list[pytest.Item]) -> None:
    """Every file using host B is in B's group (a test process killing B must not run beside it)."""
    strays = sorted(
        {_file(i.nodeid) for i in items if "host_b" in getattr(i, "fixturenames", ())} - set(GROUPS)
    )
    if strays:
        raise pytest.UsageError(f"tests/schedule.py GROUPS: add {', '.join(strays)} to host B's group")


def order(items: list[pytest.Item]) -> None:
    """Sort `items` in place: files by recorded seconds, longest first; a file's own tests keep their order."""
    try:
        recorded: dict[str, float] = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return
    if not recorded:
        return
    unknown = statistics.median(recorded.values())
    weight: dict[str, float] = defaultdict(float)
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        name, file = unit(item.nodeid), _file(item.nodeid)
        if file not in first:
            first[file] = index
            weight[name] += recorded.get(file, unknown)
        first.setdefault(name, index)
    items.sort(
        key=lambda item: (-weight[unit(item.nodeid)], first[unit(item.nodeid)], first[_file(item.nodeid)])
    )


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
