"""The seam between the engine and a session's sandbox.

The engine only ever sees this protocol; `sandbox.docker_backend` implements it against a real
Docker engine and tests may implement it in memory. Every call is synchronous and thread-safe:
one worker thread per agent session calls into it, and many threads share one connection.
Paths are workspace-relative or absolute inside the container (the workspace is `/workspace`).
Errors inside the container come back as `SandboxError` subclasses, never as raw Docker errors.
"""

from __future__ import annotations

import builtins  # annotations after `def list` in a class body say builtins.list: there `list` is the method
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

WORKSPACE = "/workspace"
# Where a tool leaves an output too long to hand the model whole (hangar.engine.tools.truncate): the model
# reads it back from there, and the default rules let it without asking.
TOOL_OUTPUT_DIR = "/tmp/hangar/tool-output"


class SandboxError(Exception):
    """A request the sandbox could not carry out (bad path, missing file, agent error...)."""


class SandboxUnavailable(SandboxError):
    """The container or its agent died or cannot be reached; the next call may recreate it."""


class FileNotFound(SandboxError):
    pass


class QuotaExceeded(SandboxError):
    """No new workspace now: the host's disk is at its high watermark or over its budget, or the organisation
    over its own (sandbox/budget.py)."""


class SandboxPaused(SandboxError):
    """The sandbox is paused because the disk (or its org's budget) is at its line (sandbox/watermark.py):
    its files are kept, and it runs again once there is room."""


@dataclass(frozen=True)
class ExecResult:
    status: Literal["exited", "timeout", "cancelled"]
    exit_code: int | None
    output: str  # stdout+stderr interleaved, head and tail kept when over the cap
    dropped_bytes: int = 0
    # The complete stream's size (bytes, lines), whatever was dropped from `output`.
    total_bytes: int | None = None
    total_lines: int | None = None
    # Where the sandbox kept the complete output when it outgrew the cap (asked for with
    # `full_output_path`); None when nothing was dropped or it could not be kept.
    full_output_path: str | None = None


@dataclass(frozen=True)
class ReadResult:
    content: str  # lines as text (no line-number prefix), already cut per OpenCode's rules
    total_lines: int
    offset: int  # 0-based first line returned
    truncated: bool  # more lines exist after the returned window
    binary: bool = False


@dataclass(frozen=True)
class FileStat:
    path: str
    type: Literal["file", "dir", "symlink", "other"]
    size: int
    mtime: float


@dataclass(frozen=True)
class GrepMatch:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class FileDiff:
    path: str
    before: str
    after: str
    additions: int
    deletions: int
    status: Literal["added", "deleted", "modified"] = "modified"


@dataclass
class SandboxSpec:
    """What a sandbox is created with. Limits are enforced by Docker, not by the agent."""

    session_id: str
    org_id: str = ""
    project_id: str = ""
    image: str | None = None  # None: the built Hangar base image
    cpus: float = 1.0
    memory_mb: int = 1024
    pids: int = 256
    disk_mb: int = 1024
    command_timeout_s: int = 600
    network: Literal["none", "allowlist"] = "none"
    # network="allowlist": "pypi.org", "*.github.com", "host:8080", "10.1.2.3:8080", "10.0.0.0/8:5000"
    # (no port: 80 and 443). Hostnames never reach private/host addresses; explicit IPs/CIDRs may.
    allowlist: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # sandbox-safe variables only
    # The orgs whose written bytes share a disk budget with this one: one list per owner of the org, each
    # the orgs that owner owns (sandbox.budget's per-person budget). Not a property of the container.
    disk_groups: list[list[str]] = field(default_factory=list)
    # What the org and the orgs of disk_groups have written on other sandbox hosts, MB by org id, as their
    # heartbeats reported it (the engine reads the host registry): the budgets count every host.
    disk_elsewhere_mb: dict[str, float] = field(default_factory=dict)


class Sandbox(Protocol):
    session_id: str

    def exec(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_s: float | None = None,
        on_output: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        full_output_path: str | None = None,
    ) -> ExecResult: ...

    def cancel_execs(self) -> int: ...
    def mcp_request(
        self, name: str, command: list[str], env: dict[str, str], message: dict[str, Any], timeout_s: float
    ) -> dict[str, Any]:
        """One JSON-RPC request to the local MCP server `name` (the agent starts `command` with `env` on
        first use, restarts it when it has died, replaces it when either changed); its response."""
        ...

    def read(self, path: str, *, offset: int = 0, limit: int = 2000) -> ReadResult: ...
    def read_bytes(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The whole file; SandboxError ("too large") above max_bytes or the sandbox's own limit (16 MiB)."""
        ...

    def write(self, path: str, content: str | bytes) -> None: ...
    def stat(self, path: str) -> FileStat | None: ...
    def list(self, path: str = WORKSPACE, *, ignore: list[str] | None = None) -> tuple[list[str], bool]:
        """Up to 100 paths (dirs end with '/') under `path`; bool says the listing was truncated."""
        ...

    def glob(self, pattern: str, path: str = WORKSPACE) -> tuple[builtins.list[str], bool]:
        """Matching file paths, newest first, capped at 100; bool says truncated."""
        ...

    def grep(
        self, pattern: str, path: str = WORKSPACE, *, include: str | None = None
    ) -> tuple[builtins.list[GrepMatch], bool]: ...
    def mkdir(self, path: str) -> None: ...
    def remove(self, path: str) -> None: ...
    def move(self, src: str, dst: str) -> None: ...

    # Shadow-git snapshots (seed 003 "Snapshots: The Shadow Git Repo").
    def snapshot_track(self) -> str: ...
    def snapshot_track_changed(self, base: str | None) -> tuple[str, builtins.list[str]]:
        """Track (as `snapshot_track`) and return (tree, paths): the workspace-relative paths whose
        content or mode differs between tree `base` and the new tree ([] when `base` is None or equal).
        One round trip; cheapest when `base` is the tree tracked last."""
        ...

    def snapshot_diff(self, from_hash: str, to_hash: str | None = None) -> builtins.list[FileDiff]: ...
    def snapshot_changed(self, from_hash: str, to_hash: str) -> builtins.list[str]:
        """Workspace-relative paths that differ between two trees (no file contents)."""
        ...

    def snapshot_restore(self, tree_hash: str) -> None: ...
    def snapshot_revert(self, tree_hash: str, paths: builtins.list[str]) -> None: ...

    # Language servers (agent/lsp.py), started on the first file of their language.
    def lsp_touch(
        self, path: str, *, wait_ms: int = 3000, mode: str = "auto"
    ) -> dict[str, builtins.list[dict[str, Any]]]:
        """What the language servers publish once `path`'s server has seen its current content (waiting up
        to `wait_ms`): LSP diagnostics by absolute path. {} when no server covers the file, the workspace's
        opencode.json and `mode` (auto | on | off, agent/lsp.py) turn none on, or the server failed."""
        ...

    def lsp_query(
        self, query: str, path: str | None = None, *, line: int = 0, character: int = 0, text: str = ""
    ) -> Any:
        """One LSP query (definition, references, implementation, hover, documentSymbol, workspaceSymbol),
        position 0-based; the server's raw result, None when there is none."""
        ...

    def lsp_status(self) -> builtins.list[dict[str, Any]]: ...
