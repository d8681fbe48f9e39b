"""A tool's own CPU work in the worker is bounded: the edit replacers on huge files and hostile
oldStrings, the diffs the file tools report, a deadline, and the run's abort. Each runs in a thread with
a time limit: on unbounded code it would pin that thread for hours."""

import random
import threading
import time

import pytest

from hangar.engine.tools import budget
from hangar.engine.tools.base import ToolError
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL


def timed(harness, tool, limit_s, **args):
    """(seconds taken, result or exception); fails if the call is still running after `limit_s`."""
    box: dict = {}

    def call():
        started = time.monotonic()
        try:
            box["result"] = execute_tool(ALL[tool], args, harness.ctx())
        except Exception as exc:
            box["result"] = exc
        box["took"] = time.monotonic() - started

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(limit_s)
    assert not thread.is_alive(), f"{tool} still running after {limit_s} s"
    return box["took"], box["result"]


@pytest.fixture
def huge(local):
    """A 300,000-line file the model has read, every line the same statement."""
    local.sandbox.write("/workspace/huge.py", "x = 1\n" * 300_000)
    local.read_paths.add("/workspace/huge.py")
    return local


def test_an_edit_whose_closing_anchor_is_absent_from_a_300000_line_file_ends_in_seconds(huge):
    took, result = timed(
        huge, "edit", 30, filePath="huge.py", oldString="x = 1\ny = 2\nabsent()", newString="z"
    )
    assert isinstance(result, ToolError) and (
        "Could not find oldString" in str(result) or "gave up" in str(result)
    ), result
    assert took < 15, took


def test_an_edit_matching_every_line_of_a_300000_line_file_reports_multiple_matches_in_seconds(huge):
    took, result = timed(huge, "edit", 30, filePath="huge.py", oldString="  x = 1  ", newString="x = 2")
    assert isinstance(result, ToolError) and ("multiple matches" in str(result) or "gave up" in str(result))
    assert took < 15, took


def test_line_similarity_of_very_long_lines_is_capped(local):
    long_a, long_b = "a" * 100_000, "b" * 100_000
    content = f"start\n{long_a}\nend\nstart\n{long_b}\nend\n"
    local.sandbox.write("/workspace/long.txt", content)
    local.read_paths.add("/workspace/long.txt")
    took, result = timed(
        local, "edit", 30, filePath="long.txt", oldString=f"start\n{'c' * 100_000}\nend", newString="x"
    )
    assert isinstance(result, ToolError), result  # no block is similar enough: nothing replaced
    assert took < 10, took


def test_a_match_that_outlives_its_deadline_ends_with_an_error_for_the_model(huge, monkeypatch):
    # No time at all: the first tick of the match is past the deadline, on a machine of any speed (0.3 s
    # raced a fast machine's match, which then ended "not found").
    monkeypatch.setattr(budget, "TOOL_CPU_S", 0.0)
    block = "\n".join(f"  x   =   {i}" for i in range(2000))  # whitespace-normalised block search: slow
    took, result = timed(huge, "edit", 30, filePath="huge.py", oldString=block, newString="y")
    assert isinstance(result, ToolError) and "gave up" in str(result), result
    assert took < 5, took


def test_abort_stops_a_match_in_progress(huge, monkeypatch):
    from hangar.engine.tools import replacers

    block = "\n".join(f"  x   =   {i}" for i in range(2000))
    ticks = {"n": 0}

    def tick_then_abort() -> None:
        # The abort arrives once the match is under way (a timer raced a fast machine's match).
        ticks["n"] += 1
        if ticks["n"] == 5:
            huge.abort.set()
        budget.tick()

    monkeypatch.setattr(replacers, "tick", tick_then_abort)
    took, result = timed(huge, "edit", 30, filePath="huge.py", oldString=block, newString="y")
    assert ticks["n"] >= 5, ticks
    assert isinstance(result, ToolError) and "aborted" in str(result).lower(), result
    assert took < 3, took


def test_the_diff_of_rewriting_a_large_file_is_bounded(local):
    rng = random.Random(1)
    before = "".join(f"v{rng.randrange(150)}\n" for _ in range(40_000))  # difflib's quadratic case
    after = "".join(f"v{rng.randrange(150)}\n" for _ in range(40_000))
    local.sandbox.write("/workspace/big.txt", before)
    local.read_paths.add("/workspace/big.txt")
    took, result = timed(local, "write", 60, filePath="big.txt", content=after)
    assert not isinstance(result, Exception), result
    diff = result.metadata["diff"]
    assert diff.count("\n-") >= 1 and result.metadata["filediff"]["additions"] == 40_000
    assert took < 5, took


def _apply(before: str, diff: str) -> str:
    """Apply a unified diff to `before` (every line ending in a newline), checking each context and
    removed line against it."""
    old = before.splitlines(keepends=True)
    out, at = [], 0
    lines = diff.splitlines(keepends=True)[2:]
    k = 0
    while k < len(lines):
        header = lines[k].split(" ")
        start, _, count = header[1][1:].partition(",")
        start = int(start) - (0 if count == "0" else 1)
        out += old[at:start]
        at = start
        k += 1
        while k < len(lines) and not lines[k].startswith("@@ "):
            line = lines[k]
            if line[0] in " -":
                assert old[at].rstrip("\n") == line[1:].rstrip("\n"), (at, line)
                if line[0] == " ":
                    out.append(old[at])
                at += 1
            else:
                out.append(line[1:])
            k += 1
    return "".join(out + old[at:])


def test_a_bounded_diff_is_a_correct_patch_and_difflibs_own_when_nothing_repeats():
    import difflib

    from hangar.engine.tools.common import unified_diff

    rng = random.Random(7)
    for round_ in range(300):
        distinct = round_ % 2 == 0
        lines = [f"line {i if distinct else rng.randrange(40)}\n" for i in range(rng.randrange(0, 300))]
        edited = list(lines)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(edited) + 1)
            edited[at : at + rng.randrange(0, 3)] = [f"new {rng.random()}\n"] * rng.randrange(0, 3)
        before, after = "".join(lines), "".join(edited)
        diff = unified_diff("f", before, after)
        assert _apply(before, diff) == after
        if distinct:
            expected = "".join(
                difflib.unified_diff(
                    before.splitlines(keepends=True),
                    after.splitlines(keepends=True),
                    fromfile="f",
                    tofile="f",
                )
            )
            assert diff == expected


def test_the_per_file_locks_do_not_outlive_their_writes(local):
    from hangar.engine.tools import common

    for i in range(200):
        execute_tool(ALL["write"], {"filePath": f"f{i}.txt", "content": "x"}, local.ctx())
    assert common._locks == {}
