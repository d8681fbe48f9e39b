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


def collected(*args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args, *SAMPLE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return {line for line in out.stdout.splitlines() if "::" in line}


def files(tests: set[str]) -> set[str]:
    return {test.split("::")[0] for test in tests}


def test_each_test_lands_in_exactly_one_tier_from_what_it_uses():
    everything = collected()
    tiers = {tier: collected("-m", tier) for tier in TIERS}
    assert sum(len(tests) for tests in tiers.values()) == len(everything)
    assert set().union(*tiers.values()) == everything

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
