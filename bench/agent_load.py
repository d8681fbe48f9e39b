"""Many sessions on one worker: N concurrent scripted sessions, five steps each, the scripted server
answering every call after a delay (default 2 s), one Celery worker process (thread pool).

    .venv/bin/python bench/agent_load.py [--sessions 100] [--delay 2]

Every session runs the same five steps (bash, write, read, bash, answer) in its own real Docker sandbox,
persisted in Postgres (database `hangar_bench`). Sandboxes are provisioned before the clock starts
(their creation time is reported separately): the figure of interest is the loop's own overhead.

Step overhead = for each step, (this step's assistant message completed − the previous step's completed,
or the prompt's time for the first) − the scripted delay. Worker RSS = the worker process tree, sampled
every 0.5 s, maximum. Machine CPU per step = the whole machine's CPU over the same window (Postgres,
Redis, Docker, the sandboxes, this process), by part: on 2 cores it bounds how fast a burst clears.
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
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

ROOT = Path(__file__).resolve().parents[1]
BENCH_DB = os.environ.get("HANGAR_BENCH_DB", "hangar_bench")
os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")  # the scripted server
STEPS = 5


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def turns(delay: float) -> list[list[dict]]:
    def call(name, call_id, **arguments):
        return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}

    return [
        [{"delay": delay}, call("bash", "c1", command="echo start", description="start")],
        [{"delay": delay}, call("write", "c2", filePath="/workspace/load.txt", content="hello\n")],
        [{"delay": delay}, call("read", "c3", filePath="/workspace/load.txt")],
        [{"delay": delay}, call("bash", "c4", command="cat load.txt", description="check")],
        [{"delay": delay}, {"text": "All five steps done."}],
    ]


def rss_mb(pid: int) -> float:
    """RSS of a process and all its descendants, in MiB."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            with open(f"/proc/{current}/task/{current}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, StopIteration, ProcessLookupError):
            continue
    return total / 1024


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu(workers: list[int]) -> dict[str, float]:
    """CPU seconds used so far, by part of the machine: the worker processes, processes inside the
    sandboxes (docker cgroups), Postgres, Redis, the Docker daemons, this bench process, the rest, and
    the whole machine (/proc/stat, non-idle). Children that exited count in their parent (cutime)."""
    hz, parts = os.sysconf("SC_CLK_TCK"), {}
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
            used = sum(int(x) for x in fields[11:15])
            part = (
                "sandbox"
                if "docker" in cgroup
                else comm
                if comm in ("postgres", "redis-server", "dockerd")
                else "containerd"
                if comm.startswith("containerd")
                else "other"
            )
            if pid == 1:
                continue  # init: its cutime is every orphan it ever reaped
        parts[part] = parts.get(part, 0.0) + used / hz
    ticks = machine_ticks()
    parts["machine"] = (sum(ticks) - ticks[3] - ticks[4]) / hz  # all but idle and iowait
    return parts


def machine_ticks() -> list[int]:
    """The whole machine's CPU ticks by kind (/proc/stat: user, nice, system, idle, iowait, ...)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def provision(session) -> None:
    from hangar.engine.sandboxes import manager, spec_for

    box = manager().get_or_create(spec_for(session))
    box.snapshot_track()
    box.close()


def settle(idle_share: float = 0.8, limit_s: float = 60.0) -> float:
    """Wait until the machine is mostly idle for a second before the clock starts: what the set-up leaves
    behind (dockerd and the kernel flushing 100 new filesystems, the warm-up session's sandbox) is not
    billed to the sessions. Returns the wait."""
    started = time.monotonic()

    def idle_and_total() -> tuple[int, int]:
        ticks = machine_ticks()
        return ticks[3] + ticks[4], sum(ticks)

    while time.monotonic() - started < limit_s:
        idle0, total0 = idle_and_total()
        time.sleep(1.0)
        idle1, total1 = idle_and_total()
        if (idle1 - idle0) / max(1, total1 - total0) >= idle_share:
            break
    return time.monotonic() - started


def create_db() -> None:
    import psycopg

    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=100, help="threads per worker process")
    parser.add_argument("--workers", type=int, default=1, help="worker processes on this host")
    parser.add_argument("--db-pool", type=int, default=10, help="Postgres pool size per worker process")
    parser.add_argument("--keep", action="store_true", help="keep the sessions (for inspection)")
    args = parser.parse_args()

    queue = f"load-{uuid.uuid4().hex[:6]}"
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}",
        "PYTHONPATH": f"{ROOT}/platform:{ROOT}",
        "DJANGO_SETTINGS_MODULE": "hangar.settings",
        "HANGAR_ENGINE_QUEUE": queue,
    }
    worker_env = {**env, "HANGAR_DB_POOL_MAX": str(args.db_pool)} if args.db_pool else env
    # Every session's sandbox is provisioned before the clock starts, so a warm pool would serve none of
    # them: its refill (creating containers) would only take CPU from the sessions being measured.
    worker_env = {**worker_env, "HANGAR_SANDBOX_POOL": "0"}
    os.environ.update({k: env[k] for k in ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "HANGAR_ENGINE_QUEUE")})
    os.environ["HANGAR_SANDBOX_POOL"] = "0"  # this process pre-provisions the sessions' own sandboxes
    create_db()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
    import django

    django.setup()
    import httpx

    from hangar.accounts.actors import Actor
    from hangar.accounts.models import Membership, Org, Role, User
    from hangar.audit.models import ActorType
    from hangar.conversations.models import Message, Session
    from hangar.conversations.services import session_create
    from hangar.engine.sandboxes import manager
    from hangar.engine.services import session_prompt
    from hangar.projects import crypto
    from hangar.projects.models import Project, ProviderCredential
    from scripted_llm import ScriptedServer

    scripted = ScriptedServer().start()
    script_id = f"load-{uuid.uuid4().hex[:8]}"
    httpx.post(
        f"http://127.0.0.1:{scripted.port}/_scripts",
        json={"id": script_id, "turns": turns(args.delay), "title": "Load"},
    ).raise_for_status()

    org, _ = Org.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    user = User.objects.filter(email="bench@bench.test").first() or User.objects.create_user(
        "bench@bench.test"
    )
    Membership.objects.get_or_create(org=org, user=user, defaults={"role": Role.OWNER})
    project, _ = Project.objects.get_or_create(org=org, slug="load", defaults={"name": "load"})
    ProviderCredential.objects.update_or_create(
        org=org,
        user=None,
        provider="scripted",
        defaults={"api_base": scripted.url, "api_key_encrypted": crypto.encrypt("sk-bench")},
    )
    actor = Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email)

    sessions = [
        session_create(actor=actor, project=project, model={"providerID": "scripted", "modelID": script_id})
        for _ in range(args.sessions)
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        # Provision, then let go of the attach: in production the worker creates or claims the sandbox
        # itself and owns the direct attach; a sandbox still held here would force the worker onto the
        # slower `docker exec` relay (~50 ms each, serialised by dockerd) and bill that to step 1. A
        # first track waits for the agent's start-up work (its snapshot repo), as the warm pool does
        # before it hands a container out.
        list(pool.map(provision, sessions))
    sandbox_s = time.monotonic() - started
    log(f"{len(sessions)} sandboxes ready in {sandbox_s:.1f}s")

    logs = Path(tempfile.mkdtemp(prefix="hangar-load-"))
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "hangar",
                "worker",
                "--pool",
                "threads",
                "--concurrency",
                str(args.concurrency),
                "-Q",
                queue,
                "--loglevel",
                "WARNING",
                "-n",
                f"load{uuid.uuid4().hex[:4]}@%h",
                "--without-gossip",
                "--without-mingle",
            ],
            cwd=ROOT,
            env=worker_env,
            stdout=(logs / f"worker{i}.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        for i in range(args.workers)
    ]
    peak = [0.0]
    done = threading.Event()

    def sample():
        while not done.wait(0.5):
            peak[0] = max(peak[0], sum(rss_mb(w.pid) for w in workers))

    threading.Thread(target=sample, daemon=True).start()
    try:
        # Warm the worker (LiteLLM import, first connection) with one session not counted.
        warm = session_create(
            actor=actor, project=project, model={"providerID": "scripted", "modelID": "default"}
        )
        session_prompt(actor=actor, session=warm, parts=[{"type": "text", "text": "warm up"}])
        _wait([warm.pk], timeout=120)
        log(f"machine quiet after {settle():.1f}s")
        begin = time.monotonic()
        cpu_before = sum(cpu_s(w.pid) for w in workers)
        machine_before = machine_cpu([w.pid for w in workers])
        for i, session in enumerate(sessions):
            session_prompt(
                actor=actor, session=session, parts=[{"type": "text", "text": f"load session {i}"}]
            )
        _wait([s.pk for s in sessions], timeout=STEPS * args.delay * 20 + 120)
        wall = time.monotonic() - begin
        cpu = sum(cpu_s(w.pid) for w in workers) - cpu_before
        machine_after = machine_cpu([w.pid for w in workers])
    finally:
        done.set()
        for worker in workers:
            worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
        scripted.stop()

    overheads, errors, by_index = [], 0, [[] for _ in range(STEPS)]
    for session in sessions:
        user_msg = Message.objects.filter(session=session, role="user").first()
        assistants = [
            m.data for m in Message.objects.filter(session=session, role="assistant").order_by("id")
        ]
        ok = (
            len(assistants) == STEPS
            and all(not a.get("error") for a in assistants)
            and assistants[-1].get("finish") == "stop"
        )
        if not ok:
            errors += 1
            continue
        previous = user_msg.data["time"]["created"]
        for index, message in enumerate(assistants):
            completed = message["time"]["completed"]
            overheads.append(completed - previous - args.delay * 1000)
            by_index[index].append(overheads[-1])
            previous = completed
    for session in sessions + [warm]:
        try:
            manager().destroy(session.pk)
        except Exception:
            pass
    if not args.keep:
        Session.objects.filter(pk__in=[s.pk for s in sessions] + [warm.pk]).delete()
    overheads.sort()
    result = {
        "sessions": len(sessions),
        "steps_per_session": STEPS,
        "errors": errors,
        "scripted_delay_s": args.delay,
        "wall_s": round(wall, 1),
        "sandbox_setup_s": round(sandbox_s, 1),
        "step_overhead_p50_ms": round(statistics.median(overheads), 1) if overheads else None,
        "step_overhead_p99_ms": round(overheads[int(len(overheads) * 0.99) - 1], 1) if overheads else None,
        "step_overhead_max_ms": round(overheads[-1], 1) if overheads else None,
        "step_overhead_p50_by_step_ms": [round(statistics.median(x), 1) if x else None for x in by_index],
        "worker_rss_mb": round(peak[0], 1),
        "worker_processes": args.workers,
        "worker_cpu_ms_per_step": round(cpu * 1000 / max(1, len(sessions) * STEPS), 1),
        # The whole machine's CPU per step over the same window, and its parts (see machine_cpu).
        "machine_cpu_ms_per_step": dict(
            sorted(
                (
                    (part, round((used - machine_before.get(part, 0.0)) * 1000 / (len(sessions) * STEPS), 1))
                    for part, used in machine_after.items()
                ),
                key=lambda kv: -kv[1],
            )
        ),
        "worker_logs": str(logs),
    }
    print(json.dumps(result))


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
