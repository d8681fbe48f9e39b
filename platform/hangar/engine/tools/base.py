"""The contract between the loop and its tools.

A tool validates its arguments with a pydantic model (OpenCode's parameter names exactly), runs
against the session's `Sandbox`, and returns a `ToolResult`. Failures are raised as `ToolError`
(the message goes back to the model, R008); permission flow is raised by `ctx.ask` (the loop
catches `PermissionAsked` to park the run and `PermissionRejected` to stop the turn).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel

from sandbox.protocol import Sandbox


class ToolError(Exception):
    """A tool failed in a way the model should see and may recover from."""


class PermissionAsked(Exception):
    """The call needs a person's answer; the loop records the request and releases the worker."""

    def __init__(self, request_id: str):
        super().__init__(request_id)
        self.request_id = request_id


class PermissionRejected(Exception):
    """A deny rule or a person rejected the call. `feedback` is the person's message to the model."""

    def __init__(self, message: str, feedback: str = ""):
        super().__init__(message)
        self.feedback = feedback


@dataclass
class ToolResult:
    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ToolContext:
    session_id: str
    message_id: str
    call_id: str
    agent: str
    sandbox: Sandbox
    abort: threading.Event
    # ask(permission, patterns, always, metadata): returns if allowed, raises PermissionAsked/Rejected.
    ask: Callable[[str, list[str], list[str], dict[str, Any]], None]
    # Stream progress into the running tool part (e.g. bash output so far, throttled by the loop).
    update_metadata: Callable[[dict[str, Any]], None]
    # Read-before-write: the loop persists these per session so any worker sees them.
    was_read: Callable[[str], bool]
    mark_read: Callable[[str], None]
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the tool registry, for batch


class Tool(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[type[BaseModel]]

    def execute(self, args: BaseModel, ctx: ToolContext) -> ToolResult: ...
