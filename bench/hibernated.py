"""Ten thousand hibernated sessions on one disk: what each costs on disk and in the host's sweeps.

    .venv/bin/python bench/hibernated.py [--sessions 10000] [--files-kb 256] [--resume 5] [--keep]

A hibernated session is what `DockerSandboxes.hibernate` leaves: its workspace volume's image, compacted
and unmounted, its registry record, its Session row; no container, no network, no loop device. One
session is run for real first (a sandbox made on the project's default 2 GB quota, --files-kb of files
written, a snapshot tracked, hibernated); its image is then copied, sparse, for every other session (each
a real ext4 image holding those files, registered and with a Session row of its own in the bench
database): the real create path (mkfs, mount, container) costs ~0.3 s per session on these machines, and
what is measured here is what the sessions cost once hibernated, not making them.

Reported at the end: disk taken (the images' allocated blocks and the registry records, against the
filesystem's own free-space drop), Docker containers before and after (unchanged: hibernated sessions
keep none), and the wall time over all of them of the platform's reaper sweep (the batch question of
which sessions live, as the platform asks it, and the per-session one it asked before), of one disk-budget
check (what every new sandbox pays under the host-wide lock), of the watermark sweep and of the host's
heartbeat figures; then --resume random sessions are resumed through the engine (files read back) and
hibernated again. Everything made is destroyed unless --keep. The last line printed is one JSON object.
"""

from __future__ import annotations

import os
import random
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import ROOT, arguments, bench_env, bench_tenant, emit, log, open_bench_db

SEEK_DATA, SEEK_HOLE = 3, 4


def sparse_copy(src: Path, dst: Path) -> None:
    """Copy only the allocated extents of `src` (SEEK_DATA/SEEK_HOLE): the copy is as sparse as the image."""
    size = src.stat().st_size
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        offset = 0
        while offset < size:
            try:
                data = os.lseek(fin.fileno(), offset, SEEK_DATA)
            except OSError:
                break  # no data after offset
            hole = os.lseek(fin.fileno(), data, SEEK_HOLE)
            os.copy_file_range(fin.fileno(), fout.fileno(), hole - data, data, data)
            offset = hole
        fout.truncate(size)


def blocks_mb(paths) -> float:
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_blocks * 512
        except FileNotFoundError:
            continue
    return total / 2**20


def timed(fn, repeats: int = 1) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), result


def make_template(actor, project, files_kb: int):
    """One session run for real, then hibernated: its record and image are every copy's model."""
    from hangar.conversations.services import session_create
    from hangar.engine.workspace.sandboxes import manager, spec_for
    from sandbox import registry, volumes

    session = session_create(actor=actor, project=project, title="hibernated template")
    box = manager().get_or_create(spec_for(session))
    box.exec(f"mkdir -p src && head -c {files_kb * 1024} /dev/urandom | base64 > src/data.txt")
    box.write("README.md", "a hibernated session's workspace\n")
    box.snapshot_track()
    manager().hibernate(session.pk)
    record = registry.lookup(volumes.session_key(session.pk))
    assert record is not None
    return session, record


def populate(n: int, project, template: dict) -> list[str]:
    """n Session rows and n hibernated sandboxes copied from the template's image."""
    from hangar.conversations.models import Session
    from sandbox import registry, volumes

    image = volumes.ROOT / "volumes" / f"{template['volume']}.img"
    made: list[str] = []
    base = {k: v for k, v in template.items() if k not in ("last_active", "created_at")}
    started = time.monotonic()
    for chunk in range(0, n, 500):
        rows = Session.objects.bulk_create(
            [
                Session(org_id=project.org_id, project=project, title=f"hibernated {i}", model={})
                for i in range(chunk, min(n, chunk + 500))
            ]
        )
        for row in rows:
            volume = volumes.new_volume_id()
            sparse_copy(image, volumes.ROOT / "volumes" / f"{volume}.img")
            spec = base["spec"] | {"session_id": row.pk}
            record = base | {"session_id": row.pk, "volume": volume, "spec": spec}
            assert registry.register(volumes.session_key(row.pk), record)
            made.append(row.pk)
        log(f"{len(made)} hibernated sessions ({time.monotonic() - started:.0f}s)")
    return made


def sweeps(org_id: str) -> dict:
    from hangar.conversations.loop_selectors import session_exists, session_is_archived
    from hangar.engine.workspace.reaping import reap, watermark
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import budget, host_stats
    from sandbox.reaper import Reaper

    def check() -> None:
        with budget.reserving():
            budget.check(2048, org_id=org_id)

    one_by_one = Reaper(manager(), session_exists, is_session_archived=session_is_archived)
    reap_s, report = timed(reap)
    return {
        "reaper_sweep_s": round(reap_s, 2),
        "reaper_actions": {k: len(v) for k, v in report.items() if isinstance(v, list)},
        "reaper_sweep_asking_each_session_s": round(timed(one_by_one.run_once)[0], 2),
        # The first check of a process reads every image (sandbox.written keeps what unmounted ones hold).
        "budget_check_first_ms": round(timed(check)[0] * 1000, 1),
        "budget_check_ms": round(timed(check, 5)[0] * 1000, 1),
        "watermark_sweep_s": round(timed(watermark)[0], 2),
        "host_heartbeat_stats_ms": round(timed(lambda: host_stats.collect(manager().api), 5)[0] * 1000, 1),
    }


def resume_some(ids: list[str], k: int) -> list[float]:
    from hangar.conversations.models import Session
    from hangar.engine.workspace.sandboxes import manager, spec_for

    times = []
    for session_id in random.sample(ids, min(k, len(ids))):
        started = time.perf_counter()
        box = manager().get_or_create(spec_for(Session.objects.get(pk=session_id)))
        readme = box.read("README.md").content
        assert readme.strip() == "a hibernated session's workspace", readme
        assert box.exec("wc -c < src/data.txt").exit_code == 0
        times.append(round(time.perf_counter() - started, 2))
        manager().hibernate(session_id)
    return times


def destroy_all(ids: list[str]) -> None:
    from hangar.conversations.models import Session
    from hangar.engine.workspace.sandboxes import manager

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(manager().destroy, ids))
    Session.objects.filter(pk__in=ids).delete()


def main() -> None:
    args = arguments(
        __doc__,
        ("--sessions", {"type": int, "default": 10000}),
        ("--files-kb", {"type": int, "default": 256, "help": "random data written in the template"}),
        ("--resume", {"type": int, "default": 5, "help": "sessions resumed after the sweeps"}),
        ("--keep", {"action": "store_true", "help": "leave the sessions (to inspect or sweep again)"}),
    )
    env = bench_env(HANGAR_SANDBOX_POOL="0", HANGAR_ENGINE_QUEUE=f"hibernated-{uuid.uuid4().hex[:6]}")
    open_bench_db(env)
    import docker

    from sandbox import volumes

    # No model is called: an org of its own, whose provider stays unset (bench_tenant).
    actor, project = bench_tenant(None, "hibernated", disk_mb=None, org_slug="bench-hibernated")
    api = docker.from_env().api
    containers_before = len(api.containers(all=True))
    volumes.ROOT.mkdir(parents=True, exist_ok=True)
    fs = os.statvfs(volumes.ROOT)
    free_before = fs.f_bavail * fs.f_frsize / 2**20
    template_session, template = make_template(actor, project, args.files_kb)
    ids = [template_session.pk]
    try:
        ids += populate(args.sessions - 1, project, template)
        fs = os.statvfs(volumes.ROOT)
        images = list((volumes.ROOT / "volumes").glob("*.img"))
        records = list((volumes.ROOT / "sessions").iterdir())
        result = {
            "sessions": len(ids),
            "quota_mb_each": template["spec"]["disk_mb"],
            "quotas_total_gb": round(sum(p.stat().st_size for p in images) / 2**30, 1),
            "images_mb": round(blocks_mb(images), 1),
            "image_mb_each": round(blocks_mb(images) / len(images), 3),
            "registry_mb": round(blocks_mb(records), 1),
            "filesystem_free_drop_mb": round(free_before - fs.f_bavail * fs.f_frsize / 2**20, 1),
            "containers_before": containers_before,
            "containers_after": len(api.containers(all=True)),
            "mounts_of_root": Path("/proc/mounts").read_text().count(str(volumes.ROOT)),
            **sweeps(str(project.org_id)),
            "resume_s": resume_some(ids, args.resume),
            "load_average": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        }
        log(result)
    finally:
        if not args.keep:
            log(f"destroying {len(ids)} sessions")
            destroy_all(ids)
    emit(result | {"root": str(volumes.ROOT), "tree": str(ROOT)})


if __name__ == "__main__":
    main()
