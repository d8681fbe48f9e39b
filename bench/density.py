"""Live sessions per machine: a ramp of bursts of N live sessions, each waiting on a slow scripted model.

    .venv/bin/python bench/density.py [--steps 50,100,250] [--delay 20] [--turns 3]

At each step N sessions are provisioned (a real sandbox each: sandbox, prompt in flight), then prompted;
the scripted server (`python -m scripted_llm`, its own process) answers every model call after
--delay seconds, as real models do, with a few tool calls (bash, write, read...) before the answer. The
prompts arrive spread over one delay (--arrivals spread, as independent users' do) or all at once
(--arrivals burst: every step of every session then lands in the same instant, and the p99 is the time
the machine's cores take to clear that herd, not one step's overhead). While
they run, a bystander (another user of the same org) calls the API (GET its project list) every 0.25 s.
Reported per step: errors (sessions that did not finish cleanly, provisioning failures), step overhead
p50/p99 (as bench/agent_load.py: each step's message completed minus the previous one's, minus the
delay), the bystander's API latency p50/p99, the machine's CPU over the burst (% of all cores) and per
model call by part (worker, web, the scripted model server, sandboxes, Postgres, Redis, Docker), memory per
live sandbox (its cgroup's usage, mean), host memory available and disk free at the step's peak, and the
first limit hit: the first of errors > 0, step overhead p99 > 500 ms, API p99 > 200 ms, a provisioning
failure, host memory under 1 GB. The ramp stops at the step that hits one (--keep-going runs them all).
The web (Daphne) and one worker (threads) run as deployed; the warm pool is off (every sandbox is made
before its step's clock starts). The last line printed is one JSON object.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import agent_load
import density_probe
import httpx
from common import (
    ROOT,
    Scripted,
    arguments,
    bench_env,
    bench_tenant,
    emit,
    free_port,
    log,
    machine_ticks,
    open_bench_db,
    percentile,
    stop,
    wait_port,
    wait_quiet,
)

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory/docker")  # cgroup v1 (this host); v2 below
CGROUP_V2 = Path("/sys/fs/cgroup/system.slice")


def turns(delay: float, count: int) -> list[list[dict]]:
    """`count` turns: tool calls, then the answer; every one `delay` seconds after its request."""

    def call(name: str, call_id: str, **arguments: object) -> dict:
        return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}

    tools = [
        call("bash", "c1", command="echo start", description="start"),
        call("write", "c2", filePath="/workspace/density.txt", content="hello\n"),
        call("read", "c3", filePath="/workspace/density.txt"),
        call("bash", "c4", command="cat density.txt", description="check"),
    ]
    script = [[{"delay": delay}, tool] for tool in tools[: max(0, count - 1)]]
    return [*script, [{"delay": delay}, {"text": "Done."}]]


def container_memory_mb(container_id: str) -> float | None:
    for path in (
        CGROUP_MEMORY / container_id / "memory.usage_in_bytes",
        CGROUP_V2 / f"docker-{container_id}.scope" / "memory.current",
    ):
        try:
            return int(path.read_text()) / 2**20
        except (OSError, ValueError):
            continue
    return None


def host_memory_available_mb() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def disk_free_mb() -> float:
    import os

    from sandbox import volumes

    fs = os.statvfs(volumes.ROOT)
    return fs.f_bavail * fs.f_frsize / 2**20


class Web:
    def __init__(self, env: dict[str, str]):
        self.port = free_port()
        self.logs = Path(tempfile.mkdtemp(prefix="hangar-density-"))
        self.proc = subprocess.Popen(
            [str(ROOT / "deploy" / "run-web.sh"), "-b", "127.0.0.1", "-p", str(self.port)],
            cwd=ROOT,
            env={**env, "HANGAR_PYTHON": sys.executable},
            stdout=(self.logs / "daphne.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        wait_port(self.port, self.proc, "daphne")


class Bystander:
    """Another member of the org, listing its projects every 0.25 s while the step runs."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token
        self.samples: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(headers={"Authorization": f"Bearer {self.token}"}, timeout=30) as client:
            while not self._stop.wait(0.25):
                started = time.perf_counter()
                try:
                    client.get(self.url).raise_for_status()
                    self.samples.append((time.perf_counter() - started) * 1000)
                except httpx.HTTPError:
                    self.failures += 1

    def __enter__(self) -> Bystander:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(35)


def _token(actor) -> str:
    from hangar.accounts import tokens
    from hangar.accounts.models import ApiToken

    raw, prefix = tokens.generate()
    ApiToken.objects.create(
        org_id=actor.org_id, user=actor.user, name="density", prefix=prefix, digest=tokens.digest(raw)
    )
    return raw


def provision_all(sessions: list) -> tuple[int, float]:
    """Each session's sandbox, made before the clock starts. (failures, seconds)."""
    failures = 0
    started = time.monotonic()

    def one(session) -> bool:
        try:
            agent_load.provision(session)
            return True
        except Exception as exc:
            log(f"provisioning {session.pk} failed: {exc!r}")
            return False

    with ThreadPoolExecutor(8) as pool:
        failures = sum(1 for ok in pool.map(one, sessions) if not ok)
    return failures, time.monotonic() - started


def container_ids(sessions: list) -> dict[str, str]:
    """Session id -> its container's id (one Docker call)."""
    from hangar.engine.workspace.sandboxes import manager
    from sandbox import containers

    by_name = {
        c["Names"][0].lstrip("/"): c["Id"]
        for c in manager().api.containers(all=True, filters={"name": containers.SESSION_PREFIX})
    }
    out = {}
    for session in sessions:
        cid = by_name.get(containers.session_container_name(session.pk))
        if cid:
            out[session.pk] = cid
    return out


def sample_sandboxes(ids: dict[str, str]) -> list[float]:
    out = []
    for container_id in ids.values():
        memory = container_memory_mb(container_id)
        if memory is not None:
            out.append(memory)
    return out


def run_step(
    n: int, args, actor, project, model: dict, bystander_url: str, token: str, workers, named: dict[int, str]
) -> dict:
    from hangar.conversations.services import session_create
    from hangar.engine.services import session_prompt

    sessions = [session_create(actor=actor, project=project, model=model) for _ in range(n)]
    provision_failures, provision_s = provision_all(sessions)
    log(f"step {n}: {n - provision_failures} sandboxes ready in {provision_s:.1f}s")
    log(f"step {n}: machine quiet after {wait_quiet(limit_s=30):.1f}s")
    peak = {"memory_low_mb": host_memory_available_mb(), "disk_low_mb": disk_free_mb()}
    worker_pids = [w.pid for w in workers]
    ids = container_ids(sessions)
    idle = density_probe.snapshot(worker_pids, set(ids.values()))
    sweeps_idle = density_probe.sweep_times()
    load_start = density_probe.load_average()
    sandbox_memory: list[float] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(1.0):
            peak["memory_low_mb"] = min(peak["memory_low_mb"], host_memory_available_mb())
            peak["disk_low_mb"] = min(peak["disk_low_mb"], disk_free_mb())

    threading.Thread(target=watch, daemon=True).start()
    parts_before = agent_load.machine_cpu(worker_pids, named)
    ticks_before, begin = machine_ticks(), time.monotonic()
    with Bystander(bystander_url, token) as bystander:
        gap = args.delay / n if args.arrivals == "spread" else 0.0
        for i, session in enumerate(sessions):
            # A text of its own: the scripted server keeps each conversation's turn by its first message.
            text = f"density {n}-{i} {uuid.uuid4().hex[:8]}"
            session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": text}])
            time.sleep(gap)
        time.sleep(min(args.delay / 2, 10))  # every session is waiting on its model now
        sandbox_memory = sample_sandboxes(ids)
        waiting = density_probe.snapshot(worker_pids, set(ids.values()))
        sweeps_waiting = density_probe.sweep_times()
        agent_load._wait([s.pk for s in sessions], timeout=args.turns * args.delay * 10 + 300)
    wall = time.monotonic() - begin
    ticks_after = machine_ticks()
    parts_after = agent_load.machine_cpu(worker_pids, named)
    done.set()
    agent_load.STEPS = args.turns
    overheads, _by_index, errors = agent_load.step_overheads(sessions, args.delay)
    busy = (sum(ticks_after) - ticks_after[3] - ticks_after[4]) - (
        sum(ticks_before) - ticks_before[3] - ticks_before[4]
    )
    total = sum(ticks_after) - sum(ticks_before)
    result = {
        "sessions": n,
        "errors": errors + provision_failures,
        "provision_failures": provision_failures,
        "provision_s": round(provision_s, 1),
        "wall_s": round(wall, 1),
        "step_overhead_p50_ms": round(statistics.median(overheads), 1) if overheads else None,
        "step_overhead_p99_ms": round(percentile(overheads, 0.99), 1) if overheads else None,
        "api_p50_ms": round(statistics.median(bystander.samples), 1) if bystander.samples else None,
        "api_p99_ms": round(percentile(bystander.samples, 0.99), 1) if bystander.samples else None,
        "api_failures": bystander.failures,
        "machine_cpu_pct": round(100 * busy / max(1, total), 1),
        # Milliseconds of CPU per model call, by part: what one step costs the machine, and who pays it
        # (the scripted model server stands in for a provider, which would not run on this machine).
        "cpu_ms_per_call": {
            part: round((used - parts_before.get(part, 0.0)) * 1000 / max(1, n * args.turns), 1)
            for part, used in parts_after.items()
        },
        "memory_per_sandbox_mb": round(statistics.mean(sandbox_memory), 1) if sandbox_memory else None,
        "host_memory_available_low_mb": round(peak["memory_low_mb"]),
        "disk_free_low_mb": round(peak["disk_low_mb"]),
        "load_average_start": load_start,
        "load_average_end": density_probe.load_average(),
        "idle": {k: round(v, 1) for k, v in idle.items()},
        "waiting": {k: round(v, 1) for k, v in waiting.items()},
        **density_probe.per_session(idle, waiting, n),
        "sweeps_idle": sweeps_idle,
        "sweeps_waiting": sweeps_waiting,
    }
    from hangar.conversations.models import Session
    from hangar.engine.workspace.sandboxes import manager

    def destroy(session) -> None:
        try:
            manager().destroy(session.pk)
        except Exception as exc:
            log(f"destroying {session.pk} failed: {exc!r}")

    with ThreadPoolExecutor(8) as pool:  # one at a time took about 5 minutes at 1,000
        list(pool.map(destroy, sessions))
    Session.objects.filter(pk__in=[s.pk for s in sessions]).delete()
    return result


def limit_hit(step: dict) -> str:
    if step["provision_failures"]:
        return f"{step['provision_failures']} sandboxes could not be made"
    if step["errors"]:
        return f"{step['errors']} sessions did not finish cleanly"
    if step["step_overhead_p99_ms"] is not None and step["step_overhead_p99_ms"] > 500:
        return f"step overhead p99 {step['step_overhead_p99_ms']} ms > 500 ms"
    if step["api_failures"] or (step["api_p99_ms"] is not None and step["api_p99_ms"] > 200):
        return f"bystander API p99 {step['api_p99_ms']} ms > 200 ms ({step['api_failures']} failed)"
    if step["host_memory_available_low_mb"] < 1024:
        return f"host memory available {step['host_memory_available_low_mb']} MB < 1 GB"
    return ""


def main() -> None:
    args = arguments(
        __doc__,
        ("--steps", {"default": "50,100,250", "help": "live sessions per step, comma-separated"}),
        ("--delay", {"type": float, "default": 20.0, "help": "seconds the model takes per call"}),
        (
            "--turns",
            {"type": int, "default": 3, "help": "model calls per session (tool calls, then the answer)"},
        ),
        ("--concurrency", {"type": int, "default": 1000, "help": "threads of the worker"}),
        ("--db-pool", {"type": int, "default": 20, "help": "Postgres pool size of the worker"}),
        ("--keep-going", {"action": "store_true", "help": "run every step, past the first limit"}),
        (
            "--arrivals",
            {
                "choices": ["spread", "burst"],
                "default": "spread",
                "help": "spread: the prompts spread evenly over one model delay, as independent users' "
                "arrive; burst: all at once, so that every step of every session lands in the same instant "
                "(a herd: its p99 is the time to clear the herd on this machine's cores)",
            },
        ),
    )
    args.workers = 1
    queue = f"density-{uuid.uuid4().hex[:6]}"
    env = bench_env(HANGAR_ENGINE_QUEUE=queue, HANGAR_SANDBOX_POOL="0")
    open_bench_db(env)
    scripted = Scripted()
    script_id = scripted.load(turns(args.delay, args.turns), title="Density")
    actor, project = bench_tenant(scripted.url, "density", disk_mb=None)  # the default 2 GB quota
    model = {"providerID": "scripted", "modelID": script_id}
    token = _token(actor)
    web = Web(env)
    bystander_url = f"http://127.0.0.1:{web.port}/api/orgs/{project.org.slug}/projects/"
    workers, logs = agent_load.start_workers(args, {**env, "HANGAR_DB_POOL_MAX": str(args.db_pool)}, queue)
    named = {scripted.proc.pid: "scripted_model", web.proc.pid: "web"}
    steps: list[dict] = []
    first_limit = ""
    try:
        for n in [int(x) for x in args.steps.split(",") if x.strip()]:
            step = run_step(n, args, actor, project, model, bystander_url, token, workers, named)
            step["limit"] = limit_hit(step)
            steps.append(step)
            log(f"step {n}: {step}")
            if step["limit"] and not first_limit:
                first_limit = f"{n} sessions: {step['limit']}"
                if not args.keep_going:
                    break
    finally:
        for worker in workers:
            stop(worker, timeout=30)
        stop(web.proc)
        scripted.stop()
    emit(
        {
            "delay_s": args.delay,
            "turns": args.turns,
            "arrivals": args.arrivals,
            "steps": steps,
            "first_limit": first_limit or None,
            "worker_logs": str(logs),
        }
    )


if __name__ == "__main__":
    main()
