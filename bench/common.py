"""What the benchmarks share: arguments, JSON output, percentiles, a quiet machine before the clock starts,
/proc readings, ports and child servers, and the bench database with its tenant.

Each script prints its progress on stderr and, last on stdout, one JSON object (`emit`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCH_DB = os.environ.get("HANGAR_BENCH_DB", "hangar_bench")
os.environ.setdefault("HANGAR_MODEL_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")  # the scripted server
# hangar, sandbox, scripted_llm importable, and ahead of bench/ itself (a script's own folder comes first,
# and bench/sandbox.py would otherwise stand in for the sandbox package), PYTHONPATH set or not.
for _path in (str(ROOT / "platform"), str(ROOT)):
    while _path in sys.path:
        sys.path.remove(_path)
    sys.path.insert(0, _path)


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


def arguments(doc: str | None, *options: tuple[str, dict[str, Any]]) -> argparse.Namespace:
    """Parse the command line: `options` are (flag, add_argument keywords); the description is the first
    paragraph of the script's docstring."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    for flag, keywords in options:
        parser.add_argument(flag, **keywords)
    return parser.parse_args()


def emit(result: dict) -> None:
    """The script's result: one JSON object, the last line on stdout."""
    print(json.dumps(result), flush=True)


# --- figures ------------------------------------------------------------------------------------------


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1): the smallest sample with at least q of them at or below it."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def summary(samples: list[float], *quantiles: float, digits: int = 2) -> dict:
    """{"median_ms", "p<q>_ms" for each quantile, "n"} of samples in ms."""
    out = {"median_ms": round(statistics.median(samples), digits)}
    for q in quantiles:
        out[f"p{round(q * 100)}_ms"] = round(percentile(samples, q), digits)
    out["n"] = len(samples)
    return out


# --- the machine ----------------------------------------------------------------------------------------


def machine_ticks() -> list[int]:
    """The whole machine's CPU ticks by kind (/proc/stat: user, nice, system, idle, iowait, ...)."""
    with open("/proc/stat") as f:
        return [int(x) for x in f.readline().split()[1:]]


def wait_quiet(idle_share: float = 0.8, limit_s: float = 60.0) -> float:
    """Wait until the machine is mostly idle for a second before the clock starts, so what set-up leaves
    behind (dockerd and the kernel flushing new filesystems, a warm-up session's sandbox) is not billed to
    what is measured. Returns the wait."""
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


def proc_fields(pid: int) -> list[str]:
    """/proc/<pid>/stat after the command name (field 3 on)."""
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process (all its threads)."""
    fields = proc_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its live descendants (a launcher script's children)."""
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += cpu_s(current)
            with open(f"/proc/{current}/task/{current}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return total


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


# --- servers --------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port}")


def stop(proc: subprocess.Popen, timeout: float = 15) -> None:
    """Terminate a child, killing it if it does not exit within `timeout`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()


class Scripted:
    """`python -m scripted_llm` in its own process (zero latency), with scripts loaded over its API."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scripted_llm", "--port", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port, self.proc, "scripted_llm")
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def load(self, turns: list, title: str = "Bench session") -> str:
        import httpx

        script_id = f"bench-{uuid.uuid4().hex[:8]}"
        httpx.post(
            f"http://127.0.0.1:{self.port}/_scripts", json={"id": script_id, "turns": turns, "title": title}
        ).raise_for_status()
        return script_id

    def stop(self) -> None:
        self.proc.terminate()


# --- the bench database -----------------------------------------------------------------------------------


def bench_env(**extra: str) -> dict[str, str]:
    """The environment of a process on the bench database (`hangar_bench`, or HANGAR_BENCH_DB)."""
    return {
        **os.environ,
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{BENCH_DB}",
        "PYTHONPATH": f"{ROOT}/platform:{ROOT}",
        "DJANGO_SETTINGS_MODULE": "hangar.settings",
        **extra,
    }


def open_bench_db(env: dict[str, str]) -> None:
    """Create and migrate the bench database, point this process at it (`env`'s settings) and set up
    Django."""
    import psycopg

    os.environ.update(env)
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [BENCH_DB]).fetchone():
            conn.execute(f'CREATE DATABASE "{BENCH_DB}"')
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    import django

    django.setup()


def bench_tenant(
    api_base: str | None, project_slug: str, disk_mb: int | None = 256, org_slug: str = "bench"
) -> tuple[Any, Any]:
    """The bench org, its owner and a project whose "scripted" provider is `api_base`: (actor, project).
    Set up directly, not through the services: a fixture of the benchmark, found again on the next run.
    `disk_mb`: the project's workspace quota (None: the default sandbox settings). `api_base` None leaves
    the org's provider alone, and a bench that calls no model takes an org of its own (`org_slug`): the
    provider is the org's, and another bench running at the same time points it at its own server."""
    from hangar.accounts.actors import Actor
    from hangar.accounts.models import Membership, Org, Role, User
    from hangar.audit.models import ActorType
    from hangar.projects import crypto
    from hangar.projects.models import Project, ProviderCredential

    # The bench is the only tenant: its fair shares (hangar.engine.run.fairness) must not cap what it measures.
    org, _ = Org.objects.update_or_create(
        slug=org_slug,
        defaults={"name": org_slug.title(), "max_concurrent_runs": 100_000, "max_live_sandboxes": 100_000},
    )
    user = User.objects.filter(email="bench@bench.test").first() or User.objects.create_user(
        "bench@bench.test"
    )
    Membership.objects.get_or_create(org=org, user=user, defaults={"role": Role.OWNER})
    # 256 MB workspaces (the default is 2 GB): a hundred of them must fit the org's and the host's disk
    # budgets (sandbox/budget.py), which refuse promising more than the disk can give.
    disk = disk_mb if disk_mb is not None else Project._meta.get_field("sandbox_disk_mb").default
    project, _ = Project.objects.update_or_create(
        org=org, slug=project_slug, defaults={"name": project_slug, "sandbox_disk_mb": disk}
    )
    if api_base is None:
        return Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email), project
    ProviderCredential.objects.update_or_create(
        org=org,
        user=None,
        provider="scripted",
        defaults={"api_base": api_base, "api_key_encrypted": crypto.encrypt("sk-bench")},
    )
    return Actor(type=ActorType.USER, org_id=org.pk, user=user, label=user.email), project


def agent_turns(delay: float) -> list[list[dict]]:
    """The five-step script of the load and CPU benches: bash, write, read, bash, answer, each answer
    `delay` seconds after the request."""

    def call(name: str, call_id: str, **arguments: Any) -> dict:
        return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}

    return [
        [{"delay": delay}, call("bash", "c1", command="echo start", description="start")],
        [{"delay": delay}, call("write", "c2", filePath="/workspace/load.txt", content="hello\n")],
        [{"delay": delay}, call("read", "c3", filePath="/workspace/load.txt")],
        [{"delay": delay}, call("bash", "c4", command="cat load.txt", description="check")],
        [{"delay": delay}, {"text": "All five steps done."}],
    ]
