"""The test tiers (tests/tiers.py): each test lands in exactly one, from what it uses (a fast test's guards:
tests/test_fast_tier.py)."""

import subprocess
import sys
from pathlib import Path

from tests.tiers import TIERS

ROOT = Path(__file__).resolve().parents[1]
# One module per way a tier is decided: a sandbox directory, local-directory tools, the hand-marked loop
# tier, API tests on the database, Chromium, and a module whose one Docker test is marked by hand.
SAMPLE = [
    "tests/sandbox/test_files.py",
    "tests/engine/tools/test_tool_files_local.py",
    "tests/engine/fast/test_loop_fast.py",
    "tests/api/test_api_projects.py",
    "tests/web/test_csp.py",
    "tests/repos/test_web_sandbox_work.py",
    "tests/test_production_settings.py",
]


# One collection of the sample, in a process of its own (as `make test-fast` collects), printing each
# test's tier markers; `-m <tier>` selects exactly the tests that carry the marker.
REPORT = """
import sys, pytest
from tests.tiers import TIERS

class Report:
    def pytest_collection_finish(self, session):
        for item in session.items:
            print("TIERS", item.nodeid, ",".join(t for t in TIERS if item.get_closest_marker(t)))

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[Report()]))
"""


def collected_tiers() -> dict[str, list[str]]:
    """Each sample test's tier markers, by test id."""
    out = subprocess.run(
        [sys.executable, "-c", REPORT, *SAMPLE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    found: dict[str, list[str]] = {}
    for line in out.stdout.splitlines():
        if line.startswith("TIERS "):
            _, test, marks = [*line.split(" ", 2), ""][:3]
            found[test] = [mark for mark in marks.split(",") if mark]
    return found


def files(tests: set[str]) -> set[str]:
    return {test.split("::")[0] for test in tests}


def test_each_test_lands_in_exactly_one_tier_from_what_it_uses():
    marks = collected_tiers()
    assert files(set(marks)) == set(SAMPLE)
    assert {test: len(tiers) for test, tiers in marks.items() if len(tiers) != 1} == {}
    tiers = {tier: {test for test, found in marks.items() if tier in found} for tier in TIERS}

    assert files(tiers["docker"]) == {"tests/sandbox/test_files.py", "tests/repos/test_web_sandbox_work.py"}
    assert files(tiers["browser"]) == {"tests/web/test_csp.py"}
    assert files(tiers["fast"]) == {
        "tests/engine/tools/test_tool_files_local.py",  # the `local` sandbox: a directory of this process
        "tests/engine/fast/test_loop_fast.py",  # marked fast by hand, database and all
    }
    # The API's database tests, and a module that starts Python processes of its own.
    assert files(tiers["db"]) == {"tests/api/test_api_projects.py", "tests/test_production_settings.py"}
    # The one test of test_web_sandbox_work that builds a Docker client through no fixture is marked by hand;
    # its neighbours get the tier their worker fixture gives them.
    marked = "tests/repos/test_web_sandbox_work.py::test_the_web_process_never_starts_a_warm_pool"
    assert marked in tiers["docker"]
