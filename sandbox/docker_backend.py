"""The Docker implementation of the `Sandbox` protocol (one object per session per process)."""

from __future__ import annotations

import base64
import builtins  # annotations after `def list` in a class body say builtins.list: there `list` is the method
import os
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from sandbox import registry, volumes
from sandbox.connection import AgentConnection
from sandbox.protocol import (
    WORKSPACE,
    ExecResult,
    FileDiff,
    FileStat,
    GrepMatch,
    ReadResult,
    SandboxError,
    SandboxPaused,
    SandboxSpec,
    SandboxUnavailable,
)
from sandbox.pty import PtyHandle

TOUCH_EVERY_S = 10.0
CALL_TIMEOUT_S = 120.0
EXEC_SLACK_S = 30.0  # beyond the command timeout: kill grace plus transport


class Reopener(Protocol):
    """What a sandbox asks of its manager (sandbox.manager.DockerSandboxes) when its connection died:
    resume or recreate the container, and a fresh connection to its agent."""

    def reopen(self, box: DockerSandbox) -> AgentConnection: ...


class DockerSandbox:
    """Thread-safe. When the container or agent dies mid-call the call raises
    SandboxUnavailable and the next call resumes (or recreates) the sandbox via its manager;
    the workspace volume is kept either way."""

    def __init__(
        self, manager: Reopener, spec: SandboxSpec, container_name: str, conn: AgentConnection
    ) -> None:
        self.session_id = spec.session_id
        self.spec = spec
        self.container_name = container_name
        self._manager = manager
        self._conn: AgentConnection | None = conn
        self._reconnect_lock = threading.Lock()
        self._touched = 0.0
        self._key = volumes.session_key(spec.session_id)
        self._paused_marker = str(registry.paused_path(self._key))  # one stat per call: no Path built

    # --- plumbing ---------------------------------------------------------------------------

    @property
    def manager(self) -> Reopener:
        """The manager that made this box (sandbox.manager.DockerSandboxes, for a live spec change)."""
        return self._manager

    @property
    def connection(self) -> AgentConnection:
        conn = self._conn
        if conn is not None and not conn.dead:
            return conn
        with self._reconnect_lock:
            if self._conn is None or self._conn.dead:
                self._conn = self._manager.reopen(self)
            return self._conn

    def _call(self, op: str, args: dict[str, Any] | None = None, **kwargs: Any) -> Any:
        paused = registry.paused_reason(self._key) if os.path.exists(self._paused_marker) else None
        if paused is not None:  # frozen by sandbox.watermark: say why at once rather than wait on it
            raise SandboxPaused(
                f"sandbox paused: {paused}. Its files are kept; it runs again once the disk has room."
            )
        now = time.monotonic()
        if now - self._touched > TOUCH_EVERY_S:
            self._touched = now
            registry.touch(self._key)
        kwargs.setdefault("timeout", CALL_TIMEOUT_S)
        return self.connection.call(op, args, **kwargs)

    def close(self) -> None:
        """Drop this process's connection (the sandbox keeps running)."""
        conn, self._conn = self._conn, None
        if conn:
            conn.close()

    def ping(self) -> dict[str, Any]:
        reply: dict[str, Any] = self._call("ping")
        return reply

    # --- commands ---------------------------------------------------------------------------

    def exec(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float | None = None,
        on_output: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        max_output: int | None = None,
        full_output_path: str | None = None,
    ) -> ExecResult:
        timeout_s = timeout_s or self.spec.command_timeout_s
        args = {
            "command": command,
            "cwd": cwd,
            "env": env,
            "timeout": timeout_s,
            "stream": on_output is not None,
            "max_output": max_output,
            "full_output_path": full_output_path,
        }
        on_frame = (lambda msg: on_output(msg.get("data", ""))) if on_output else None
        result = self._call(
            "exec",
            {k: v for k, v in args.items() if v is not None},
            timeout=timeout_s + EXEC_SLACK_S,
            on_frame=on_frame,
            cancel=cancel,
        )
        return ExecResult(
            result["status"],
            result["exit_code"],
            result["output"],
            result["dropped_bytes"],
            total_bytes=result.get("total_bytes"),
            total_lines=result.get("total_lines"),
            full_output_path=result.get("full_output_path"),
        )

    def cancel_execs(self) -> int:
        """Kill every command running in the sandbox (those of a runner that died); how many."""
        cancelled: int = self._call("cancel_all")["cancelled"]
        return cancelled

    def mcp_request(
        self, name: str, command: list[str], env: dict[str, str], message: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        args = {"name": name, "command": command, "env": env, "message": message, "timeout_s": timeout_s}
        reply: dict[str, Any] = self._call("mcp", args, timeout=timeout_s + 40)  # + a cold start's handshake
        return reply

    def kill_all(self) -> None:
        """Kill every process in the sandbox but the agent (e.g. after a fork bomb)."""
        self._call("kill_all", timeout=30)

    def open_pty(
        self,
        on_output: Callable[[str], None],
        *,
        cols: int = 80,
        rows: int = 24,
        on_exit: Callable[[int | None], None] | None = None,
    ) -> PtyHandle:
        """An interactive bash on a pseudo-terminal; output arrives on `on_output` (reader thread)."""
        return PtyHandle(self.connection, on_output, cols=cols, rows=rows, on_exit=on_exit)

    # --- files ------------------------------------------------------------------------------

    def read(self, path: str, *, offset: int = 0, limit: int = 2000) -> ReadResult:
        r = self._call("read", {"path": path, "offset": offset, "limit": limit})
        return ReadResult(r["content"], r["total_lines"], r["offset"], r["truncated"], r["binary"])

    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        args = {"path": path} | ({"max_bytes": max_bytes} if max_bytes is not None else {})
        return base64.b64decode(self._call("read_bytes", args)["data"])

    def write(self, path: str, content: str | bytes) -> None:
        if isinstance(content, bytes):
            self._call("write", {"path": path, "data": base64.b64encode(content).decode()})
        else:
            self._call("write", {"path": path, "content": content})

    def stat(self, path: str) -> FileStat | None:
        r = self._call("stat", {"path": path})
        return FileStat(r["path"], r["type"], r["size"], r["mtime"]) if r else None

    def list(self, path: str = WORKSPACE, *, ignore: list[str] | None = None) -> tuple[list[str], bool]:
        r = self._call("list", {"path": path, "ignore": ignore or []})
        return r["paths"], r["truncated"]

    def glob(self, pattern: str, path: str = WORKSPACE) -> tuple[builtins.list[str], bool]:
        r = self._call("glob", {"pattern": pattern, "path": path})
        return r["paths"], r["truncated"]

    def grep(
        self, pattern: str, path: str = WORKSPACE, *, include: str | None = None
    ) -> tuple[builtins.list[GrepMatch], bool]:
        r = self._call("grep", {"pattern": pattern, "path": path, "include": include})
        return [GrepMatch(m["path"], m["line"], m["text"]) for m in r["matches"]], r["truncated"]

    def mkdir(self, path: str) -> None:
        self._call("mkdir", {"path": path})

    def remove(self, path: str) -> None:
        self._call("remove", {"path": path})

    def move(self, src: str, dst: str) -> None:
        self._call("move", {"src": src, "dst": dst})

    # --- snapshots --------------------------------------------------------------------------

    def snapshot_track(self) -> str:
        tree: str = self._call("snapshot_track", timeout=600)["hash"]
        return tree

    def snapshot_track_changed(self, base: str | None) -> tuple[str, builtins.list[str]]:
        try:
            r = self._call("snapshot_track_changed", {"base": base}, timeout=600)
        except SandboxError as exc:
            if "unknown op" not in str(exc):
                raise
            # A container started before this op existed (resumed after an upgrade): two round trips.
            tree = self.snapshot_track()
            return tree, (self.snapshot_changed(base, tree) if base and base != tree else [])
        return r["hash"], list(r["paths"])

    def snapshot_diff(self, from_hash: str, to_hash: str | None = None) -> builtins.list[FileDiff]:
        r = self._call("snapshot_diff", {"from": from_hash, "to": to_hash}, timeout=600)
        return [
            FileDiff(f["path"], f["before"], f["after"], f["additions"], f["deletions"], f["status"])
            for f in r["files"]
        ]

    def snapshot_changed(self, from_hash: str, to_hash: str) -> builtins.list[str]:
        return list(self._call("snapshot_changed", {"from": from_hash, "to": to_hash}, timeout=600)["paths"])

    def snapshot_restore(self, tree_hash: str) -> None:
        self._call("snapshot_restore", {"hash": tree_hash}, timeout=600)

    def snapshot_revert(self, tree_hash: str, paths: builtins.list[str]) -> None:
        self._call("snapshot_revert", {"hash": tree_hash, "paths": paths}, timeout=600)

    def snapshot_gc(self) -> None:
        self._call("snapshot_gc", timeout=600)

    # --- language servers -------------------------------------------------------------------

    def lsp_touch(
        self, path: str, *, wait_ms: int = 3000, mode: str = "auto"
    ) -> dict[str, builtins.list[dict[str, Any]]]:
        # A cold server's start (up to 30 s in the agent) is on top of the wait.
        args = {"path": path, "wait_ms": wait_ms, "mode": mode}
        reply = self._call("lsp_touch", args, timeout=wait_ms / 1000 + 45)
        found: dict[str, builtins.list[dict[str, Any]]] = reply["diagnostics"]
        return found

    def lsp_query(
        self, query: str, path: str | None = None, *, line: int = 0, character: int = 0, text: str = ""
    ) -> Any:
        args = {"query": query, "path": path, "line": line, "character": character, "text": text}
        return self._call("lsp_query", args, timeout=60)["result"]

    def lsp_status(self) -> builtins.list[dict[str, Any]]:
        rows: builtins.list[dict[str, Any]] = self._call("lsp_status")
        return rows


__all__ = ["DockerSandbox", "SandboxUnavailable"]
