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

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT), str(ROOT / "bench")]
BENCH_DB = os.environ.get("HANGAR_BENCH_DB", "hangar_bench")
os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")  # the scripted server
STEPS = 5


def log(*args) -> None:
    print(*args, file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    from agent_load import create_db, turns  # the same script and database as the load bench

    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}",
        "DJANGO_SETTINGS_MODULE": "hangar.settings",
        "HANGAR_SANDBOX_POOL": "0",
        "PYTHONPATH": f"{ROOT}/platform:{ROOT}",
    }
    os.environ.update(env)
    create_db()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    import django

    django.setup()
    import httpx

    from hangar.accounts.actors import Actor
    from hangar.accounts.models import Membership, Org, Role, User
    from hangar.audit.models import ActorType
    from hangar.conversations.models import Message, Session
    from hangar.conversations.services import session_create
    from hangar.engine.providers.litellm_model import warm_up
    from hangar.engine.sandboxes import manager, spec_for
    from hangar.engine.services import session_prompt
    from hangar.engine.worker import run_session_once
    from hangar.projects import crypto
    from hangar.projects.models import Project, ProviderCredential

    port = _free_port()
    scripted = subprocess.Popen(
        [sys.executable, "-m", "scripted_llm", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_port(port)
        url = f"http://127.0.0.1:{port}/v1"
        script_id = f"cpu-{uuid.uuid4().hex[:8]}"
        httpx.post(
            f"http://127.0.0.1:{port}/_scripts", json={"id": script_id, "turns": turns(0), "title": "Cpu"}
        ).raise_for_status()
        org, _ = Org.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
        user = User.objects.filter(email="bench@bench.test").first() or User.objects.create_user(
            "bench@bench.test"
        )
        Membership.objects.get_or_create(org=org, user=user, defaults={"role": Role.OWNER})
        project, _ = Project.objects.get_or_create(org=org, slug="cpu", defaults={"name": "cpu"})
        ProviderCredential.objects.update_or_create(
            org=org,
            user=None,
            provider="scripted",
            defaults={"api_base": url, "api_key_encrypted": crypto.encrypt("sk-bench")},
        )
        actor = Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email)
        model = {"providerID": "scripted", "modelID": script_id}
        sessions = [
            session_create(actor=actor, project=project, model=model) for _ in range(args.sessions + 1)
        ]
        for session in sessions:
            manager().get_or_create(spec_for(session)).close()
        warm_up()
        log(f"{len(sessions)} sandboxes ready")

        # The first session warms this process (first connections, lazy imports) and is not counted.
        cpu, pg_cpu, profiler = [], [], cProfile.Profile(time.thread_time) if args.profile else None
        for index, session in enumerate(sessions):
            session_prompt(
                actor=actor, session=session, parts=[{"type": "text", "text": f"cpu session {index}"}]
            )
            backend = _backend_pid()
            started, pg_started = time.process_time(), _cpu_s(backend)
            if profiler and index:
                profiler.enable()
            run_session_once(session.pk)
            if profiler and index:
                profiler.disable()
            used = time.process_time() - started
            pg_used = _cpu_s(backend) - pg_started if backend == _backend_pid() else None
            assistants = list(Message.objects.filter(session=session, role="assistant").order_by("id"))
            if len(assistants) != STEPS or assistants[-1].data.get("finish") != "stop":
                raise RuntimeError(
                    f"session {session.pk} did not finish its {STEPS} steps: {[m.data for m in assistants]}"
                )
            if index:
                cpu.append(used * 1000 / STEPS)
                if pg_used is not None:
                    pg_cpu.append(pg_used * 1000 / STEPS)
        for session in sessions:
            manager().destroy(session.pk)
        Session.objects.filter(pk__in=[s.pk for s in sessions]).delete()
    finally:
        scripted.terminate()

    if profiler:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative")
        steps = args.sessions * STEPS
        rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][3])[: args.top]
        log(f"{'cum ms/step':>11} {'own ms/step':>11} {'calls/step':>10}  function")
        for (filename, line, name), (_cc, calls, own, cum, _callers) in rows:
            short = "/".join(Path(filename).parts[-2:])
            log(
                f"{cum * 1000 / steps:11.2f} {own * 1000 / steps:11.2f} {calls / steps:10.1f}  {name} ({short}:{line})"
            )
    print(
        json.dumps(
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
    )


def _backend_pid() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_port(port: int) -> None:
    import socket

    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("scripted_llm did not start")


if __name__ == "__main__":
    main()
