"""Worker CPU per agent step, in one process, with where it goes.

    .venv/bin/python bench/step_cpu.py [--sessions 20] [--profile] [--top 40]

Runs `run_session_once` (what the Celery task calls) in this process, one session after another, on
the agent_load script (bash, write, read, bash, answer) against the scripted server in its own process
(zero latency), each session in its own real Docker sandbox (provisioned before the clock, as in
agent_load), persisted in Postgres (database `hangar_bench`). It measures this process's CPU time
(time.process_time: every thread, the sandbox reader and broadcast sender included) per step: the
worker's share of bench/agent_load.py's per-step cost, without 100 threads contending for the GIL; and
the CPU of the Postgres backend that served it (/proc of the backend's pid: statements' server side).

--profile adds a cProfile of the measured sessions: the functions with the most cumulative time, per
step. The last line printed is one JSON object.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import time
from pathlib import Path

from common import Scripted, agent_turns, arguments, bench_env, bench_tenant, cpu_s, emit, log, open_bench_db

STEPS = 5


def measure(args, sessions, actor) -> tuple[list[float], list[float], cProfile.Profile | None]:
    """Run each session in this process; this process's and its Postgres backend's CPU per step of every
    session but the first (which warms this process: first connections, lazy imports)."""
    from hangar.conversations.models import Message
    from hangar.engine.run.worker import run_session_once
    from hangar.engine.services import session_prompt

    cpu, pg_cpu, profiler = [], [], cProfile.Profile(time.thread_time) if args.profile else None
    for index, session in enumerate(sessions):
        session_prompt(actor=actor, session=session, parts=[{"type": "text", "text": f"cpu session {index}"}])
        backend = _backend_pid()
        started, pg_started = time.process_time(), cpu_s(backend)
        if profiler and index:
            profiler.enable()
        run_session_once(session.pk)
        if profiler and index:
            profiler.disable()
        used = time.process_time() - started
        pg_used = cpu_s(backend) - pg_started if backend == _backend_pid() else None
        assistants = list(Message.objects.filter(session=session, role="assistant").order_by("id"))
        if len(assistants) != STEPS or assistants[-1].data.get("finish") != "stop":
            raise RuntimeError(
                f"session {session.pk} did not finish its {STEPS} steps: {[m.data for m in assistants]}"
            )
        if index:
            cpu.append(used * 1000 / STEPS)
            if pg_used is not None:
                pg_cpu.append(pg_used * 1000 / STEPS)
    return cpu, pg_cpu, profiler


def print_profile(profiler: cProfile.Profile, steps: int, top: int) -> None:
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])[:top]
    log(f"{'cum ms/step':>11} {'own ms/step':>11} {'calls/step':>10}  function")
    for (filename, line, name), (_cc, calls, own, cum, _callers) in rows:
        short = "/".join(Path(filename).parts[-2:])
        log(
            f"{cum * 1000 / steps:11.2f} {own * 1000 / steps:11.2f} {calls / steps:10.1f}  {name} ({short}:{line})"
        )


def main() -> None:
    args = arguments(
        __doc__,
        ("--sessions", {"type": int, "default": 20}),
        ("--profile", {"action": "store_true"}),
        ("--top", {"type": int, "default": 40}),
    )
    open_bench_db(bench_env(HANGAR_SANDBOX_POOL="0"))  # the same database as the load bench
    from hangar.conversations.models import Session
    from hangar.conversations.services import session_create
    from hangar.engine.providers.litellm_model import warm_up
    from hangar.engine.workspace.sandboxes import manager, spec_for

    scripted = Scripted()
    try:
        script_id = scripted.load(agent_turns(0), title="Cpu")  # the agent_load script, zero delay
        actor, project = bench_tenant(scripted.url, "cpu")
        model = {"providerID": "scripted", "modelID": script_id}
        sessions = [
            session_create(actor=actor, project=project, model=model) for _ in range(args.sessions + 1)
        ]
        for session in sessions:
            manager().get_or_create(spec_for(session)).close()
        warm_up()
        log(f"{len(sessions)} sandboxes ready")
        cpu, pg_cpu, profiler = measure(args, sessions, actor)
        for session in sessions:
            manager().destroy(session.pk)
        Session.objects.filter(pk__in=[s.pk for s in sessions]).delete()
    finally:
        scripted.stop()

    if profiler:
        print_profile(profiler, args.sessions * STEPS, args.top)
    emit(
        {
            "sessions": args.sessions,
            "steps_per_session": STEPS,
            "profiled": bool(profiler),
            "worker_cpu_ms_per_step_p50": round(statistics.median(cpu), 2),
            "worker_cpu_ms_per_step_min": round(min(cpu), 2),
            # The Postgres backend serving this process's connection (the lease keeper's is not in it):
            # a mean over all measured steps, as /proc counts in 10 ms ticks.
            "postgres_backend_cpu_ms_per_step": round(statistics.mean(pg_cpu), 2) if pg_cpu else None,
        }
    )


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


if __name__ == "__main__":
    main()
