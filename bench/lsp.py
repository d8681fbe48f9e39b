"""Language servers in the sandbox: what a session pays for them.

    .venv/bin/python bench/lsp.py [--edits 10]

Per language (pyright for Python, typescript-language-server for TypeScript), in a fresh sandbox each:
  * idle RSS of the sandbox before any server started (today's ~10 MB: nothing may be added to it),
  * the first diagnostics after a write: the server's cold start plus its first analysis,
  * diagnostics after each later edit (warm): p50/p90 over --edits edits, each one introducing or fixing an
    error, so the server must publish anew,
  * the sandbox's RSS with the server running.
Times are the agent round trip `lsp_touch` as the write/edit tools call it, measured on the host.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import docker
from common import arguments, emit, log, summary

from sandbox.manager import DockerSandboxes
from sandbox.protocol import SandboxSpec

CASES = {
    "python": ("/workspace/bench.py", "def f(x: int) -> int:\n    return x + 1\n\n\nvalue: int = f({arg})\n"),
    "typescript": (
        "/workspace/bench.ts",
        "export function f(x: number): number {{\n  return x + 1;\n}}\n\nconst value: number = f({arg});\n",
    ),
}


def sandbox_rss_mb(client: docker.DockerClient, box) -> float:
    """RSS of everything in the sandbox's cgroup (v1, cgroupfs driver), as bench/sandbox.py reads it."""
    cid = client.api.inspect_container(box.container_name)["Id"]
    stat = Path(f"/sys/fs/cgroup/memory/docker/{cid}/memory.stat").read_text().splitlines()
    return int(dict(line.split() for line in stat)["total_rss"]) / 2**20


def measure(manager: DockerSandboxes, client: docker.DockerClient, language: str, edits: int) -> dict:
    path, template = CASES[language]
    sid = f"bench-lsp-{uuid.uuid4().hex[:8]}"
    box = manager.get_or_create(SandboxSpec(session_id=sid, memory_mb=1024, pids=256, disk_mb=256))
    try:
        box.exec("true")
        time.sleep(2)
        idle = sandbox_rss_mb(client, box)
        box.write(path, template.format(arg='"one"'))
        started = time.perf_counter()
        # A cold server may take longer than one touch waits (30 s at most) on a loaded machine.
        while not box.lsp_touch(path, wait_ms=30_000, mode="on").get(path):
            if time.perf_counter() - started > 180:
                raise SystemExit(f"{language}: no diagnostics for the first write within 180 s")
        cold_ms = (time.perf_counter() - started) * 1000
        warm = []
        for i in range(edits):
            box.write(path, template.format(arg=str(i) if i % 2 else f'"{i}"'))
            started = time.perf_counter()
            box.lsp_touch(path, wait_ms=30_000, mode="on")
            warm.append((time.perf_counter() - started) * 1000)
        time.sleep(2)
        running = sandbox_rss_mb(client, box)
    finally:
        manager.destroy(sid)
    result = {
        "idle_rss_mb_no_server": round(idle, 1),
        "first_diagnostics_ms_cold": round(cold_ms),
        "diagnostics_after_edit_ms": summary(warm, 0.5, 0.9, digits=0),
        "rss_mb_with_server": round(running, 1),
    }
    log(f"{language}: {result}")
    return result


def main() -> None:
    args = arguments(__doc__, ("--edits", {"type": int, "default": 10}))
    client = docker.from_env()
    manager = DockerSandboxes(client)
    emit({language: measure(manager, client, language, args.edits) for language in CASES})


if __name__ == "__main__":
    main()
