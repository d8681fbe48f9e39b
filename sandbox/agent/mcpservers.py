"""Local (stdio) MCP servers a session's agent uses, run here in the sandbox (issue 27).

The worker sends `{"op": "mcp", "name", "command", "env", "message", "timeout_s"}`: one JSON-RPC request for
the server `name`. The server is started on first use (as the sandbox user, in /workspace, in a process
group of its own, with the sandbox's env, the given env on top), initialised (initialize, then
notifications/initialized), and kept for the next request; one that has died is started again, and one
whose command or env changed is replaced. A server idle for IDLE_S is stopped; the container's stop (at
hibernate) ends them all. Requests to one server go one at a time: most stdio servers answer in order.

What the server writes on stdout is read line by line (MAX_LINE bytes at most; a longer line fails the
request and restarts the server); a request it sends us (roots/list, sampling) gets a "method not found"
error, a notification is dropped, but for `notifications/tools/list_changed`: it gives the server a new tools
version, which every answer carries (`toolsVersion`, beside the server's `capabilities` from its
initialize), so the worker lists its tools again at the run's next step. Versions come from one counter of the agent's, so a restarted server (version 0) differs from a
changed one. stderr goes to a bounded log file for a person to read."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
import time
from typing import Any

from execs import kill_group
from wire import BadRequest, OpError

IDLE_S = 600.0
MAX_LINE = 16 << 20
MAX_SERVERS = 20
START_S = 30.0  # the initialize handshake
LOG_DIR = "/tmp/hangar/mcp"
PROTOCOL = "2025-06-18"
TOOLS_CHANGED = "notifications/tools/list_changed"
_versions = itertools.count(1)


class Server:
    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        self.name, self.command, self.env = name, command, env
        self.lock = threading.Lock()
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.used = time.monotonic()
        self.next_id = 0
        self.tools_version = 0
        os.makedirs(LOG_DIR, exist_ok=True)
        log = open(f"{LOG_DIR}/{name}.log", "ab")  # noqa: SIM115  # the child holds it
        try:
            self.proc = subprocess.Popen(
                command,
                cwd="/workspace",
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            raise OpError(f"cannot start MCP server {name}: {exc.strerror or exc}") from None
        finally:
            log.close()
        threading.Thread(target=self._read, daemon=True, name=f"mcp-{name}").start()
        started = self.request(
            {
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "hangar", "version": "1"},
                },
            },
            START_S,
        )
        # What it offers (tools, prompts, resources): the worker asks a list only of a server that has it.
        capabilities = (started.get("result") or {}).get("capabilities")
        self.capabilities = capabilities if isinstance(capabilities, dict) else {}
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            line = out.readline(MAX_LINE + 1)
            if not line:
                self.lines.put(None)
                return
            self.lines.put(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise OpError(f"MCP server {self.name} has exited") from None

    def request(self, message: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """Send one request (its id is ours) and wait for its response."""
        self.next_id += 1
        rid = f"hangar-{self.next_id}"
        self._send({**message, "jsonrpc": "2.0", "id": rid})
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise OpError(f"MCP server {self.name} did not answer within {timeout_s:g} s")
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise OpError(f"MCP server {self.name} exited (status {self.proc.wait()})")
            if len(line) > MAX_LINE:
                self.stop()
                raise OpError(f"MCP server {self.name} wrote a message over {MAX_LINE} bytes")
            try:
                reply = json.loads(line)
            except ValueError:
                continue  # not JSON-RPC (a stray print): skipped
            if not isinstance(reply, dict):
                continue
            if reply.get("method") == TOOLS_CHANGED and "id" not in reply:
                self.tools_version = next(_versions)
                continue
            if reply.get("id") == rid and "method" not in reply:
                return reply
            if "method" in reply and "id" in reply:  # the server asks us something: we offer nothing
                self._send(
                    {
                        "jsonrpc": "2.0",
                        "id": reply["id"],
                        "error": {"code": -32601, "message": "Method not found"},
                    }
                )

    def stop(self) -> None:
        if self.alive():
            kill_group(self.proc)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class McpServers:
    def __init__(self, environment: Any) -> None:
        self.environment = environment  # ExecRunner.environment: the sandbox's env with extras on top
        self.servers: dict[str, Server] = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._reap, daemon=True, name="mcp-reaper").start()

    def _server(self, name: str, command: list[str], env: dict[str, str]) -> Server:
        full_env = self.environment(env)
        with self.lock:
            server = self.servers.get(name)
            if server is not None and (
                not server.alive() or server.command != command or server.env != full_env
            ):
                server.stop()
                server = None
            if server is None:
                if len(self.servers) >= MAX_SERVERS and name not in self.servers:
                    raise OpError(f"at most {MAX_SERVERS} MCP servers run in a sandbox")
                server = self.servers[name] = Server(name, command, full_env)
            return server

    def request(self, args: dict) -> dict:
        name, command, env = args.get("name"), args.get("command"), args.get("env") or {}
        message, timeout_s = args.get("message"), args.get("timeout_s", 120)
        if not isinstance(name, str) or not name or "/" in name:
            raise BadRequest("name must be a server name")
        if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
            raise BadRequest("command must be a non-empty list of strings")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise BadRequest("env must map strings to strings")
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            raise BadRequest("message must be a JSON-RPC request")
        if not isinstance(timeout_s, int | float) or not 0 < timeout_s <= 3600:
            raise BadRequest("timeout_s must be between 0 and 3600")
        # A server found dead is started again here; one that dies during a request fails that request only
        # (running the call again could do its work twice), and the next request starts it again.
        server = self._server(name, command, env)
        with server.lock:
            server.used = time.monotonic()
            reply = server.request(
                {"method": message["method"], "params": message.get("params") or {}}, timeout_s
            )
            return {**reply, "toolsVersion": server.tools_version, "capabilities": server.capabilities}

    def stop_all(self, args: dict | None = None) -> dict:
        with self.lock:
            servers, self.servers = list(self.servers.values()), {}
        for server in servers:
            server.stop()
        return {"stopped": len(servers)}

    def _reap(self) -> None:
        while True:
            time.sleep(30)
            now = time.monotonic()
            with self.lock:
                idle = [n for n, s in self.servers.items() if now - s.used > IDLE_S and not s.lock.locked()]
                stopped = [self.servers.pop(n) for n in idle]
            for server in stopped:
                server.stop()
