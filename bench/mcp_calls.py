"""An MCP tool call's cost, per kind of server, as the worker makes it (hangar.engine.mcp):

    .venv/bin/python bench/mcp_calls.py [--calls 30]

- remote: a Streamable HTTP server of our own (tests/engine/mcp_server.py, the official SDK) on
  127.0.0.1, called through RemoteServer, which opens, initialises and closes an MCP session per call;
  against it, the same server called directly: one SDK session held open, one call after another;
- local: the standard-library stdio server (tests/engine/stdio_mcp_server.py) run in a real sandbox by
  its agent, called through LocalServer, the first call (the server's start and handshake) apart; against
  it, the same server run on the host and spoken to directly over its pipes.

Each figure is the call's wall time on the host, p50/p90 over --calls calls of a trivial tool."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from common import ROOT, arguments, bench_env, emit, log, open_bench_db, summary

args = arguments(__doc__, ("--calls", {"type": int, "default": 30}))
# The engine tests' helpers read their queue name at import (tests/envdefaults.py sets it for pytest).
open_bench_db(bench_env(HANGAR_MCP_ALLOWED_NETWORKS="127.0.0.1/32", HANGAR_ENGINE_QUEUE="bench-mcp"))

from hangar.engine.mcp.local import LocalServer  # noqa: E402  (after Django's set-up)
from hangar.engine.mcp.tools import RemoteServer  # noqa: E402
from sandbox.manager import DockerSandboxes  # noqa: E402
from sandbox.protocol import SandboxSpec  # noqa: E402
from tests.engine.test_mcp_tools import TOKEN, McpServer  # noqa: E402


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def remote_calls() -> tuple[list[float], list[float]]:
    server = McpServer()
    try:
        client = RemoteServer("tools", server.url, {"Authorization": f"Bearer {TOKEN}"}, 30.0, scope="bench")
        client.list_tools()  # imports and first connection, not counted
        abort = threading.Event()
        calls = [timed(lambda: client.call_tool("add", {"a": 1, "b": 2}, abort)) for _ in range(args.calls)]
        return calls, remote_direct(server.url)
    finally:
        server.stop()


def remote_direct(url: str) -> list[float]:
    """The same server through the SDK with one session held open (what a client that keeps it pays)."""
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[float]:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            httpx2.AsyncClient(headers=headers, trust_env=False) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            samples = []
            for _ in range(args.calls):
                started = time.perf_counter()
                await session.call_tool("add", {"a": 1, "b": 2})
                samples.append((time.perf_counter() - started) * 1000)
            return samples

    return anyio.run(run)


def local_direct() -> list[float]:
    """The stdio server on the host, spoken to over its pipes: the protocol's own cost."""
    server = subprocess.Popen(
        [sys.executable, str(ROOT / "tests/engine/stdio_mcp_server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None

    def request(rid: int, method: str, params: dict) -> None:
        server.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n"
        )
        server.stdin.flush()
        server.stdout.readline()

    try:
        request(0, "initialize", {})
        call = {"name": "whoami", "arguments": {}}
        return [timed(lambda i=i: request(i + 1, "tools/call", call)) for i in range(args.calls)]
    finally:
        server.kill()
        server.wait()


def local_calls() -> tuple[float, list[float]]:
    manager = DockerSandboxes()
    sid = f"bench-mcp-{uuid.uuid4().hex[:8]}"
    box = manager.get_or_create(SandboxSpec(session_id=sid, memory_mb=512, pids=128, disk_mb=256))
    try:
        source = Path(ROOT / "tests/engine/stdio_mcp_server.py").read_text()
        box.write("/workspace/.mcp/server.py", source)
        client = LocalServer("stdio", ["python3", "/workspace/.mcp/server.py"], {}, 30.0, lambda: box)
        abort = threading.Event()
        first = timed(lambda: client.call_tool("whoami", {}, abort))
        return first, [timed(lambda: client.call_tool("whoami", {}, abort)) for _ in range(args.calls)]
    finally:
        manager.destroy(sid)


def main() -> None:
    remote, remote_held = remote_calls()
    log(f"remote: {summary(remote, 0.5, 0.9)}; directly, session held: {summary(remote_held, 0.5, 0.9)}")
    first, local = local_calls()
    direct = local_direct()
    log(
        f"local: first {first:.0f} ms, then {summary(local, 0.5, 0.9)}; directly: {summary(direct, 0.5, 0.9)}"
    )
    emit(
        {
            "calls": args.calls,
            "remote_call_ms": summary(remote, 0.5, 0.9),
            "remote_direct_held_session_ms": summary(remote_held, 0.5, 0.9),
            "local_first_call_ms": round(first, 1),
            "local_call_ms": summary(local, 0.5, 0.9),
            "local_direct_ms": summary(direct, 0.5, 0.9),
        }
    )


main()
