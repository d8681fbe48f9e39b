"""Many sessions on one worker: N concurrent scripted sessions, five steps each, the scripted server
answering every call after a delay (default 2 s), one Celery worker process (thread pool).

    .venv/bin/python bench/agent_load.py [--sessions 100] [--delay 2] [--hosts 2]

Every session runs the same five steps (bash, write, read, bash, answer) in its own real Docker sandbox,
persisted in Postgres (database `hangar_bench`). Sandboxes are provisioned before the clock starts
(their creation time is reported separately): the figure of interest is the loop's own overhead.

Step overhead = for each step, (this step's assistant message completed - the previous step's completed,
or the prompt's time for the first) - the scripted delay. Worker RSS = the worker process tree, sampled
every 0.5 s, maximum. Machine CPU per step = the whole machine's CPU over the same window (Postgres,
Redis, Docker, the sandboxes, this process), by part: on 2 cores it bounds how fast a burst clears.
The last line printed is one JSON object.

--hosts 2: two sandbox hosts on this machine (hosts.TwoHosts: host B's dockerd, a host service per host)
and the worker an engine worker without a Docker socket; placement spreads the sessions over both hosts,
this process provisions them through the host queues as an engine worker would, and `hosts` reports per
host the sessions placed, its service's peak RSS and its sandboxes' memory after the burst.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import (
    ROOT,
    agent_turns,
    arguments,
    bench_env,
    bench_tenant,
    cpu_s,
    emit,
    log,
    machine_ticks,
    open_bench_db,
    percentile,
    rss_mb,
    stop,
    wait_quiet,
)
from hosts import REMOTE_ENV, TwoHosts

STEPS = 5


def machine_cpu(workers: list[int], named: dict[int, str] | None = None) -> dict[str, float]:
    """CPU seconds used so far, by part of the machine: the worker processes, processes inside the
    sandboxes (docker cgroups), Postgres, Redis, the Docker daemons, this bench process, the processes
    `named` (pid -> part), the rest, and the whole machine (/proc/stat, non-idle). Children that exited
    count in their parent (cutime)."""
    hz, parts = os.sysconf("SC_CLK_TCK"), {}
    named = named or {}
    own = {os.getpid(), *workers}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/cgroup") as f:
                cgroup = f.read()
        except OSError:
            continue
        comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()
        if pid in own:  # a worker's or the bench's children (none expected) are its own
            used, part = int(fields[11]) + int(fields[12]), "worker" if pid in workers else "bench"
        else:
            if pid == 1:
                continue  # init: its cutime is every orphan it ever reaped
            used, part = sum(int(x) for x in fields[11:15]), named.get(pid) or _part(comm, cgroup)
        parts[part] = parts.get(part, 0.0) + used / hz
    ticks = machine_ticks()
    parts["machine"] = (sum(ticks) - ticks[3] - ticks[4]) / hz  # all but idle and iowait
    return parts


def _part(comm: str, cgroup: str) -> str:
    if "docker" in cgroup:
        return "sandbox"
    if comm in ("postgres", "redis-server", "dockerd"):
        return comm
    return "containerd" if comm.startswith("containerd") else "other"


def provision(session) -> None:
    from django.conf import settings

    from hangar.engine.workspace.sandboxes import manager, spec_for

    if settings.HANGAR_SANDBOX_REMOTE:  # through the session's host's queue, as the engine worker does
        from hangar.engine.workspace.remote import forget, remote_sandbox

        remote_sandbox(session)
        forget(session.pk)
        return

    box = manager().get_or_create(spec_for(session))
    box.snapshot_track()
    box.close()


def start_workers(args, env: dict[str, str], queue: str) -> tuple[list[subprocess.Popen], Path]:
    logs = Path(tempfile.mkdtemp(prefix="hangar-load-"))
    command = [sys.executable, "-m", "celery", "-A", "hangar", "worker", "--pool", "threads"]
    command += ["--concurrency", str(args.concurrency), "-Q", queue, "--loglevel", "WARNING"]
    command += ["--without-gossip", "--without-mingle"]
    workers = [
        subprocess.Popen(
            [*command, "-n", f"load{uuid.uuid4().hex[:4]}@%h"],
            cwd=ROOT,
            env=env,
            stdout=(logs / f"worker{i}.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        for i in range(args.workers)
    ]
    return workers, logs


def run_burst(args, actor, sessions, workers) -> dict:
    """Prompt every session at once (after one uncounted warm-up session and a quiet machine) and wait for
    all of them; the wall time, the workers' CPU and the machine's CPU by part over that window."""
    from hangar.conversations.services import session_create
    from hangar.engine.services import session_prompt

    warm = session_create(
        actor=actor, project=sessions[0].project, model={"providerID": "scripted", "modelID": "default"}
    )
    session_prompt(actor=actor, session=warm, parts=[{"type": "text", "text": "warm up"}])
    _wait([warm.pk], timeout=120)
    log(f"machine quiet after {wait_quiet():.1f}s")
    pids = [w.pid for w in workers]
    begin, cpu_before, machine_before = time.monotonic(), sum(cpu_s(p) for p in pids), machine_cpu(pids)
    for i, session in enumerate(sessions):
        session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": f"load session {i}"}])
    _wait([s.pk for s in sessions], timeout=STEPS * args.delay * 20 + 120)
    return {
        "warm": warm,
        "wall": time.monotonic() - begin,
        "cpu": sum(cpu_s(p) for p in pids) - cpu_before,
        "machine_before": machine_before,
        "machine_after": machine_cpu(pids),
    }


def step_overheads(sessions, delay_s: float) -> tuple[list[float], list[list[float]], int]:
    """Each step's overhead (its message completed - the previous one's, or the prompt's - the scripted
    delay), all and by step index, and how many sessions did not finish their steps cleanly."""
    from hangar.conversations.models import Message

    overheads: list[float] = []
    by_index: list[list[float]] = [[] for _ in range(STEPS)]
    errors = 0
    for session in sessions:
        user_msg = Message.objects.filter(session=session, role="user").first()
        assistants = [
            m.data for m in Message.objects.filter(session=session, role="assistant").order_by("id")
        ]
        if not (
            len(assistants) == STEPS
            and all(not a.get("error") for a in assistants)
            and assistants[-1].get("finish") == "stop"
        ):
            errors += 1
            continue
        previous = user_msg.data["time"]["created"]
        for index, message in enumerate(assistants):
            completed = message["time"]["completed"]
            overheads.append(completed - previous - delay_s * 1000)
            by_index[index].append(overheads[-1])
            previous = completed
    return overheads, by_index, errors


def main() -> None:
    args = arguments(
        __doc__,
        ("--sessions", {"type": int, "default": 100}),
        ("--delay", {"type": float, "default": 2.0}),
        ("--concurrency", {"type": int, "default": 100, "help": "threads per worker process"}),
        ("--workers", {"type": int, "default": 1, "help": "worker processes on this host"}),
        ("--db-pool", {"type": int, "default": 10, "help": "Postgres pool size per worker process"}),
        ("--keep", {"action": "store_true", "help": "keep the sessions (for inspection)"}),
        ("--hosts", {"type": int, "default": 1, "choices": [1, 2], "help": "sandbox hosts (see above)"}),
    )
    queue = f"load-{uuid.uuid4().hex[:6]}"
    # Every session's sandbox is provisioned before the clock starts, so a warm pool would serve none of
    # them: its refill (creating containers) would only take CPU from the sessions being measured.
    env = bench_env(
        HANGAR_ENGINE_QUEUE=queue, HANGAR_SANDBOX_POOL="0", **(REMOTE_ENV if args.hosts == 2 else {})
    )
    worker_env = {**env, "HANGAR_DB_POOL_MAX": str(args.db_pool)} if args.db_pool else env
    open_bench_db(env)
    rig = TwoHosts(env) if args.hosts == 2 else None
    if rig:
        worker_env |= rig.engine_env()
    from hangar.conversations.models import Session
    from hangar.conversations.services import session_create
    from hangar.engine.workspace.sandboxes import manager
    from scripted_llm import ScriptedServer

    scripted = ScriptedServer().start()
    script_id = f"load-{uuid.uuid4().hex[:8]}"
    import httpx

    httpx.post(
        f"http://127.0.0.1:{scripted.port}/_scripts",
        json={"id": script_id, "turns": agent_turns(args.delay), "title": "Load"},
    ).raise_for_status()
    actor, project = bench_tenant(scripted.url, "load")
    model = {"providerID": "scripted", "modelID": script_id}
    sessions = [session_create(actor=actor, project=project, model=model) for _ in range(args.sessions)]
    started = time.monotonic()
    if rig:  # in waves, so that placement sees each host's sessions
        rig.provision(provision, sessions)
    else:
        with ThreadPoolExecutor(8) as pool:
            # Provision, then let go of the attach: in production the worker creates or claims the sandbox
            # itself and owns the direct attach; a sandbox still held here would force the worker onto the
            # slower `docker exec` relay (~50 ms each, serialised by dockerd) and bill that to step 1. A
            # first track waits for the agent's start-up work (its snapshot repo), as the warm pool does
            # before it hands a container out.
            list(pool.map(provision, sessions))
    sandbox_s = time.monotonic() - started
    log(f"{len(sessions)} sandboxes ready in {sandbox_s:.1f}s")

    workers, logs = start_workers(args, worker_env, queue)
    peak = [0.0]
    done = threading.Event()

    def sample():
        while not done.wait(0.5):
            peak[0] = max(peak[0], sum(rss_mb(w.pid) for w in workers))
            if rig:
                rig.sample()

    threading.Thread(target=sample, daemon=True).start()
    try:
        burst = run_burst(args, actor, sessions, workers)
    finally:
        done.set()
        for worker in workers:
            stop(worker, timeout=30)
        scripted.stop()

    overheads, by_index, errors = step_overheads(sessions, args.delay)
    warm = burst["warm"]
    ids = [s.pk for s in sessions]
    hosts = rig.report(ids) if rig else None
    if rig:
        rig.destroy([*ids, warm.pk])
        rig.stop()
    for session in [] if rig else [*sessions, warm]:
        try:
            manager().destroy(session.pk)
        except Exception:
            pass
    if not args.keep:
        Session.objects.filter(pk__in=[s.pk for s in sessions] + [warm.pk]).delete()
    steps = len(sessions) * STEPS
    before = burst["machine_before"]
    emit(
        {
            "sessions": len(sessions),
            "steps_per_session": STEPS,
            "errors": errors,
            "scripted_delay_s": args.delay,
            "wall_s": round(burst["wall"], 1),
            "sandbox_setup_s": round(sandbox_s, 1),
            "step_overhead_p50_ms": round(statistics.median(overheads), 1) if overheads else None,
            "step_overhead_p99_ms": round(percentile(overheads, 0.99), 1) if overheads else None,
            "step_overhead_max_ms": round(max(overheads), 1) if overheads else None,
            "step_overhead_p50_by_step_ms": [round(statistics.median(x), 1) if x else None for x in by_index],
            "worker_rss_mb": round(peak[0], 1),
            "worker_processes": args.workers,
            "worker_cpu_ms_per_step": round(burst["cpu"] * 1000 / max(1, steps), 1),
            # The whole machine's CPU per step over the same window, and its parts (see machine_cpu).
            "machine_cpu_ms_per_step": dict(
                sorted(
                    (
                        (part, round((used - before.get(part, 0.0)) * 1000 / max(1, steps), 1))
                        for part, used in burst["machine_after"].items()
                    ),
                    key=lambda kv: -kv[1],
                )
            ),
            "worker_logs": str(logs),
            **({"hosts": hosts, "host_logs": str(rig.logs)} if rig else {}),
        }
    )


def _wait(session_ids: list[str], timeout: float) -> None:
    from hangar.conversations.models import Session

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        busy = Session.objects.filter(pk__in=session_ids).exclude(
            status="idle", run_requested=False, lease_owner=""
        )
        if not busy.exists():
            return
        time.sleep(0.5)
    log(f"timed out with {busy.count()} sessions still running")


if __name__ == "__main__":
    main()
