"""The disk-budget check a sandbox start makes (sandbox.budget.check: the host's watermark, the org's budget,
each owner's orgs together), on a host registry of --sessions workspaces spread over --orgs orgs, with the
org's owner owning --owned orgs. Thin-provisioned sparse images with --written-kb written each, plus one
repository mirror per org. Only the filesystem: no Docker, no database.

    .venv/bin/python bench/disk_budget.py [--sessions 1000] [--orgs 50] [--owned 5] [--repeats 30]

Prints the check's median and p90 in ms, and the registry reads it cost (records opened per check)."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import arguments, emit, log, percentile

args = arguments(
    __doc__,
    ("--sessions", {"type": int, "default": 1000}),
    ("--orgs", {"type": int, "default": 50}),
    ("--owned", {"type": int, "default": 5}),
    ("--written-kb", {"type": int, "default": 64}),
    ("--repeats", {"type": int, "default": 30}),
)
root = Path(tempfile.mkdtemp(prefix="hangar-bench-budget-"))
os.environ["HANGAR_SANDBOX_ROOT"] = str(root)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox import budget, registry, volumes  # noqa: E402  (after HANGAR_SANDBOX_ROOT)


def populate() -> None:
    images = root / "volumes"
    images.mkdir(parents=True)
    block = b"x" * 1024 * args.written_kb
    for i in range(args.sessions):
        volume = volumes.new_volume_id()
        with open(images / f"{volume}.img", "wb") as fh:
            fh.write(block)
            fh.truncate(2048 * 1024 * 1024)  # a 2 GB quota, sparse
        registry.register(f"ses{i:05d}", {"org_id": str(i % args.orgs), "volume": volume})
    mirrors = root / "mirrors"
    for org in range(args.orgs):
        mirror = mirrors / f"m{org}.git"
        mirror.mkdir(parents=True)
        mirror.with_suffix(".org").write_text(str(org))
        mirror.with_suffix(".size").write_text(str(len(block)))


def main() -> None:
    populate()
    limits = budget.Limits(org_mb=10**9, owner_mb=10**9)
    groups = [[str(o) for o in range(args.owned)]]
    opened = 0
    original = registry.lookup

    def counting(key: str):
        nonlocal opened
        opened += 1
        return original(key)

    registry.lookup = counting
    samples = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        with budget.reserving():
            budget.check(2048, org_id="0", limits=limits, groups=groups)
        samples.append((time.perf_counter() - start) * 1000)
    log(f"{args.sessions} workspaces, {args.orgs} orgs, owner of {args.owned}")
    emit(
        {
            "sessions": args.sessions,
            "check_ms_p50": round(statistics.median(samples), 2),
            "check_ms_p90": round(percentile(samples, 0.9), 2),
            "records_read_per_check": opened // args.repeats,
        }
    )


try:
    main()
finally:
    import shutil

    shutil.rmtree(root, ignore_errors=True)
