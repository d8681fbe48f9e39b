"""Fixtures for the tools suite: a recording ToolContext, a local-directory sandbox for pure logic,
and a real Docker sandbox (every tool is tested against it too)."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from hangar.engine.tools.base import PermissionAsked, PermissionRejected, ToolContext
from tests.engine.tools.local_sandbox import LocalSandbox

RUN_ID = uuid.uuid4().hex[:8]


@dataclass
class Harness:
    """What a tool asked and streamed. `policy` maps a permission to allow (default), ask or deny."""

    sandbox: Any
    policy: dict[str, str] = field(default_factory=dict)
    asks: list[dict] = field(default_factory=list)
    updates: list[dict] = field(default_factory=list)
    read_paths: set[str] = field(default_factory=set)
    abort: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ask(self, permission: str, patterns: list[str], always: list[str], metadata: dict) -> None:
        with self.lock:
            self.asks.append(
                {"permission": permission, "patterns": patterns, "always": always, "metadata": metadata}
            )
        action = self.policy.get(permission, "allow")
        if action == "ask":
            raise PermissionAsked(f"per_{permission}")
        if action == "deny":
            raise PermissionRejected(f"{permission} denied", feedback=f"no {permission} please")

    def asked(self, permission: str) -> list[dict]:
        return [a for a in self.asks if a["permission"] == permission]

    def ctx(self, call_id: str = "call_1", agent: str = "build", **extra) -> ToolContext:
        return ToolContext(
            session_id=getattr(self.sandbox, "session_id", "ses_test"),
            message_id="msg_test",
            call_id=call_id,
            agent=agent,
            sandbox=self.sandbox,
            abort=self.abort,
            ask=self.ask,
            update_metadata=lambda m: self.updates.append(m() if callable(m) else m),
            was_read=self.read_paths.__contains__,
            mark_read=self.read_paths.add,
            extra=extra,
        )


@pytest.fixture
def local(tmp_path) -> Harness:
    return Harness(LocalSandbox(tmp_path))


@pytest.fixture(scope="session")
def docker_sandboxes():
    from sandbox.manager import DockerSandboxes

    manager = DockerSandboxes(extra_labels={"hangar.test": f"tools-{RUN_ID}"})
    made: list[str] = []
    manager.made = made
    yield manager
    for session_id in made:
        manager.destroy(session_id)


@pytest.fixture(scope="module")
def docker_box(docker_sandboxes):
    """One real sandbox per test module (tests use distinct file names inside it)."""
    from sandbox.protocol import SandboxSpec

    session_id = f"ttools{RUN_ID}-{uuid.uuid4().hex[:6]}"
    docker_sandboxes.made.append(session_id)
    return docker_sandboxes.get_or_create(
        SandboxSpec(session_id=session_id, memory_mb=256, pids=128, disk_mb=64)
    )


@pytest.fixture
def docker(docker_box) -> Harness:
    return Harness(docker_box)
