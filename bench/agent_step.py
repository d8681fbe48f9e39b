"""Per-step overhead of an agent session: Hangar vs the real OpenCode, same script, same client, one run.

    .venv/bin/python bench/agent_step.py [--sessions 8]

Both servers are driven through OpenCode's own HTTP API by the same client code (POST /session, POST
/session/{id}/prompt_async, then wait for `session.idle` on GET /event) and both talk to the same scripted
OpenAI-compatible server (`python -m scripted_llm`, zero latency) playing the same five-step script:
write a file, run it with bash, a whitespace-fuzzy edit, read it back, answer.

- Hangar: Daphne and one Celery worker, each started as deployed (deploy/run-web.sh, deploy/run-worker.sh:
  threads, DB pools) + the Docker sandbox + Postgres, on a database of its own
  (`hangar_bench`, migrated here); the project's default model is the script.
- OpenCode: `opencode serve` from tests/opencode_client (npm opencode-ai), pointed at the scripted server
  by an opencode.json custom provider (`@ai-sdk/openai-compatible` with a baseURL).

Step time = (session wall time - the scripted server's own time) / 5. The server's own time is measured
by replaying the same five turns with a raw HTTP client and summed per session. One warm-up session per
side is not counted. Sessions start one at a time, --gap seconds apart on both sides (default 1 s): a
session's background work (Hangar's warm pool creating the container the next session will claim, a few
hundred ms of Docker and mkfs CPU) is not billed to the next session's steps, as it would not be for a
person starting one session after another. --gap 0 shows the back-to-back figure. The last line printed
is one JSON object.

Hangar runs two projects in the same window, sessions alternating: `bench` (256 MB workspaces, non-default
sandbox settings) and `bench-default` (the default settings). A session's sandbox is warm (claimed from the
warm pool) or cold (created: loop image, mkfs, container); the host registry says which. The per-step
figures count warm sessions only; a measured session that started cold is left out and counted
(`hangar_measured_cold`). Then --cold sessions per project start cold on purpose (the pool drained just
before): `hangar_start` names both paths per project, the median session wall of each and what a cold start
adds (`cold_start_extra_ms`).

--hosts 2: then the same Hangar bench again, back to back, on two sandbox hosts (hosts.TwoHosts: host B's
dockerd, a host service per host) with the worker an engine worker without a Docker socket, which reaches
the sandboxes through the host queues and the TCP channel; `two_hosts` holds its figures and the sessions
each host took.
"""

from __future__ import annotations

import statistics
import time
import uuid

import common
import httpx
from common import (
    arguments,
    emit,
    log,
    wait_quiet,
)
from hangar_side import PROJECT_256, PROJECT_DEFAULT, PROJECTS, Hangar
from opencode_side import OpenCode, OpenCodeClient

STEPS = 5


def five_steps(path: str) -> list[list[dict]]:
    def call(name, call_id, **arguments):
        return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}

    return [
        [call("write", "c1", filePath=path, content="def f():\n    return 1\n\nprint(f())\n")],
        [call("bash", "c2", command=f"python3 {path}", description="Run the file")],
        # Wrong indentation on purpose: only the whitespace-normalising replacers find it.
        [
            call(
                "edit",
                "c3",
                filePath=path,
                oldString="def f():\n  return 1",
                newString="def f():\n    return 2",
            )
        ],
        [call("read", "c4", filePath=path)],
        [{"text": "Done: f() now returns 2."}],
    ]


# --- one client for both servers: OpenCode's HTTP API -------------------------------------------------


class Scripted(common.Scripted):
    def own_time_s(self, turns: list, repeats: int = 5) -> float:
        """Median time the server itself takes to answer the five turns, streamed over raw HTTP."""
        script_id = self.load(turns)
        totals = []
        with httpx.Client(timeout=30) as client:
            for i in range(repeats):
                total = 0.0
                body = {
                    "model": script_id,
                    "stream": True,
                    "messages": [{"role": "user", "content": f"calibrate {i}"}],
                }
                for _ in range(len(turns)):
                    started = time.perf_counter()
                    with client.stream("POST", f"{self.url}/chat/completions", json=body) as response:
                        for _ in response.iter_bytes():
                            pass
                    total += time.perf_counter() - started
                totals.append(total)
        return statistics.median(totals)


# --- OpenCode -----------------------------------------------------------------------------------------


def measure(
    name: str, client: OpenCodeClient, sessions: int, own_s: float, gap_s: float
) -> tuple[list[float], list]:
    per_step = []
    for i in range(sessions + 1):  # session 0 warms up (npm install, first container, imports)
        time.sleep(gap_s)
        wall = client.session(f"bench {name} session {i} {uuid.uuid4().hex[:6]}")
        tools = client.tools(client.last_session)
        if i == 0:
            log(f"{name}: warm-up {wall * 1000:.0f} ms, tools {tools}")
            first_tools = tools
            continue
        per_step.append(max(0.0, wall - own_s) / STEPS * 1000)
        log(f"{name}: session {i} wall {wall * 1000:.0f} ms → {per_step[-1]:.1f} ms/step")
    return per_step, first_tools


def measure_hangar(
    hangar: Hangar, clients: dict[str, OpenCodeClient], sessions: int, own_s: float, gap_s: float, cold: int
) -> dict:
    """Sessions alternating between the projects: per project, the step time of warm sessions, and the session
    wall of warm and cold ones (cold on purpose: the pool drained first)."""
    out: dict = {
        name: {"steps": [], "warm_wall": [], "cold_wall": [], "measured_cold": 0, "tools": None}
        for name in clients
    }
    cpu_start: list[float] = []
    for i in range(sessions + 1):  # session 0 warms up (imports, the first container of each shape)
        if i == 1:
            cpu_start = hangar.cpu_s()
        for name, client in clients.items():
            time.sleep(gap_s)
            wall = client.session(f"bench hangar {name} session {i} {uuid.uuid4().hex[:6]}")
            warm = hangar.started_warm(client.last_session)
            if i == 0:
                out[name]["tools"] = client.tools(client.last_session)
                log(f"hangar {name}: warm-up {wall * 1000:.0f} ms ({'warm' if warm else 'cold'})")
                continue
            if not warm:
                out[name]["measured_cold"] += 1
                out[name]["cold_wall"].append(wall)
                log(f"hangar {name}: session {i} started cold, {wall * 1000:.0f} ms: not counted in steps")
                continue
            out[name]["warm_wall"].append(wall)
            out[name]["steps"].append(max(0.0, wall - own_s) / STEPS * 1000)
            log(
                f"hangar {name}: session {i} wall {wall * 1000:.0f} ms → {out[name]['steps'][-1]:.1f} ms/step"
            )
    # The CPU the web and the worker spent per measured step (what a session's wall waits on besides the
    # sandbox and the model; the worker's share includes refilling the warm pool).
    steps = sum(len(side["steps"]) + len(side["cold_wall"]) for side in out.values()) * STEPS
    out["cpu_ms_per_step"] = {
        role: round((now - then) * 1000 / max(1, steps), 2)
        for role, now, then in zip(("web", "worker"), hangar.cpu_s(), cpu_start, strict=True)
    }
    for i in range(cold):
        for name, client in clients.items():
            wait_quiet()  # the refill of the last drain is not billed to this session
            hangar.drain_pool()
            wall = client.session(f"bench hangar {name} cold {i} {uuid.uuid4().hex[:6]}")
            if hangar.started_warm(client.last_session):  # the worker's refill won the race: not a sample
                log(f"hangar {name}: cold {i} was claimed warm after all, {wall * 1000:.0f} ms")
                continue
            out[name]["cold_wall"].append(wall)
            log(f"hangar {name}: cold {i} wall {wall * 1000:.0f} ms")
    return out


def start_figures(side: dict) -> dict:
    warm = statistics.median(side["warm_wall"]) * 1000 if side["warm_wall"] else None
    cold = statistics.median(side["cold_wall"]) * 1000 if side["cold_wall"] else None
    return {
        "warm_session_ms": round(warm, 1) if warm is not None else None,
        "cold_session_ms": round(cold, 1) if cold is not None else None,
        "cold_start_extra_ms": round(cold - warm, 1) if warm is not None and cold is not None else None,
        "warm_n": len(side["warm_wall"]),
        "cold_n": len(side["cold_wall"]),
    }


def main() -> None:
    args = arguments(
        __doc__,
        ("--sessions", {"type": int, "default": 8, "help": "measured sessions per side (plus one warm-up)"}),
        (
            "--gap",
            {
                "type": float,
                "default": 1.0,
                "help": "seconds between sessions, on both sides: what a session leaves running in the "
                "background (Hangar's warm pool starting the next container) is not billed to the next",
            },
        ),
        ("--cold", {"type": int, "default": 3, "help": "cold-start sessions per Hangar project"}),
        (
            "--hosts",
            {"type": int, "default": 1, "choices": [1, 2], "help": "2: also on two hosts (see above)"},
        ),
    )

    scripted = Scripted()
    hangar = opencode = two = None
    two_hosts: dict = {}
    try:
        own_s = scripted.own_time_s(five_steps("/workspace/bench.py"))
        log(f"scripted server's own time: {own_s * 1000:.2f} ms per five-step session")

        hangar = Hangar(scripted)
        hangar.use_script(scripted.load(five_steps("/workspace/bench.py")))
        clients = {name: OpenCodeClient(base, hangar.token) for name, base in hangar.bases.items()}
        sides = measure_hangar(hangar, clients, args.sessions, own_s, args.gap, args.cold)
        hangar.stop()
        if args.hosts == 2:  # the same bench again, back to back, with the worker remote
            two = Hangar(scripted, hosts=2)
            two.use_script(scripted.load(five_steps("/workspace/bench.py")))
            clients = {name: OpenCodeClient(base, two.token) for name, base in two.bases.items()}
            two_sides = measure_hangar(two, clients, args.sessions, own_s, args.gap, args.cold)
            two_hosts = hangar_figures(two_sides) | {"sessions_per_host": two.placed()}
            two.stop()

        oc_script = scripted.load([])  # placeholder id: the real turns need OpenCode's project path
        opencode = OpenCode(scripted, oc_script)
        scripted_turns = five_steps(str(opencode.project_dir / "bench.py"))
        httpx.post(
            f"http://127.0.0.1:{scripted.port}/_scripts",
            json={"id": oc_script, "turns": scripted_turns, "title": "Bench session"},
        ).raise_for_status()
        opencode_steps, opencode_tools = measure(
            "opencode", OpenCodeClient(opencode.base, opencode.password), args.sessions, own_s, args.gap
        )
    finally:
        for thing in (hangar, two, opencode, scripted):
            if thing is not None:
                try:
                    thing.stop()
                except Exception:
                    pass

    def p50(samples: list[float]) -> float | None:
        return round(statistics.median(samples), 1) if samples else None

    hangar = hangar_figures(sides)
    opencode_p50 = statistics.median(opencode_steps)
    hangar_p50 = hangar["hangar_step_p50_ms"]
    emit(
        {
            "sessions": args.sessions,
            "gap_s": args.gap,
            "steps_per_session": STEPS,
            **hangar,
            "opencode_step_p50_ms": round(opencode_p50, 1),
            "ratio": round(opencode_p50 / hangar_p50, 2) if hangar_p50 else None,
            "opencode_step_ms": [round(v, 1) for v in opencode_steps],
            "scripted_own_ms_per_session": round(own_s * 1000, 2),
            "hangar_tools": sides[PROJECT_256]["tools"],
            "opencode_tools": opencode_tools,
            **({"two_hosts": two_hosts} if two_hosts else {}),
        }
    )


def hangar_figures(sides: dict) -> dict:
    """One Hangar run's figures (measure_hangar's sides): warm sessions' step time per project, starts."""

    def p50(samples: list[float]) -> float | None:
        return round(statistics.median(samples), 1) if samples else None

    return {
        # Warm sessions only; the project asks 256 MB workspaces (non-default sandbox settings).
        "hangar_step_p50_ms": p50(sides[PROJECT_256]["steps"]),
        "hangar_default_step_p50_ms": p50(sides[PROJECT_DEFAULT]["steps"]),
        "hangar_start": {name: start_figures(sides[name]) for name in PROJECTS},
        "hangar_cpu_ms_per_step": sides["cpu_ms_per_step"],
        "hangar_measured_cold": {name: sides[name]["measured_cold"] for name in PROJECTS},
        "hangar_step_ms": [round(v, 1) for v in sides[PROJECT_256]["steps"]],
        "hangar_default_step_ms": [round(v, 1) for v in sides[PROJECT_DEFAULT]["steps"]],
    }


if __name__ == "__main__":
    main()
