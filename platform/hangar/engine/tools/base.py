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
from typing import Any, Protocol

from pydantic import BaseModel

from sandbox.protocol import Sandbox


class ToolError(Exception):
    """A tool failed in a way the model should see and may recover from."""


class PermissionAsked(Exception):
    """The call needs a person's answer; the loop records the request and releases the worker."""

    def __init__(self, request_id: str):
        super().__init__(request_id)
        self.request_id = request_id


class ChildRunning(PermissionAsked):
    """The call started (or found) a child session's run and waits for it to end (the `task` tool): the
    run parks as for a permission, without holding a worker; the child's run ending re-enqueues it, and
    the same call executes again. The loop starts every other call of the step before it parks, so the
    step's tasks run in parallel. `title` and `metadata` are the waiting part's (OpenCode's running
    task part names its child: `metadata.sessionId`)."""

    def __init__(self, child_id: str, title: str, metadata: dict[str, Any]):
        super().__init__(child_id)
        self.title, self.metadata = title, metadata


class PermissionRejected(Exception):
    """A deny rule or a person rejected the call. `feedback` is the person's message to the model."""

    def __init__(self, message: str, feedback: str = ""):
        super().__init__(message)
        self.feedback = feedback


class QuestionDismissed(PermissionRejected):
    """The person dismissed the tool's questions: as OpenCode 1.18.33, the call fails with exactly "The
    user dismissed this question" and the turn stops, its message keeping the step's own finish."""


# ask(permission, patterns, always, metadata): returns if allowed, raises PermissionAsked/Rejected.
Ask = Callable[[str, list[str], list[str], dict[str, Any]], None]
# A tool part's progress metadata, or a zero-argument callable building it.
Metadata = dict[str, Any] | Callable[[], dict[str, Any]]


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
    ask: Ask
    # Stream progress into the running tool part (e.g. bash output so far), throttled by the loop. Takes
    # the metadata dict, or a zero-argument callable returning it, called only when an update is due.
    update_metadata: Callable[[Metadata], None]
    # Read-before-write: the loop persists these per session so any worker sees them.
    was_read: Callable[[str], bool]
    mark_read: Callable[[str], None]
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the tool registry, for batch


class SubcallRunner(Protocol):
    """`ctx.extra["run_subcall"]`, implemented by the loop, used by `batch` (seed 000 §6.4).

    Runs one sub-call as a tool call of its own: it creates a tool part for it (pending → running
    → completed | error, with its own call id), validates `parameters`, runs the tool through
    `hangar.engine.tools.execute.execute_tool` with a child `ToolContext` (own call_id, own
    `update_metadata` bound to that part, same `ask`/`abort`/read tracking), and returns the
    `ToolResult` or raises `ToolError` (the part then ends in error). It is called from up to 25
    threads at once and must be thread-safe (each thread needs its own DB connection).

    `index` is the sub-call's position in the batch: derive the sub-part id deterministically from
    (parent call id, index) so a batch re-run after a permission reply finds the sub-calls that
    already completed and returns their stored results instead of running them twice.
    `PermissionAsked` must propagate (the batch re-raises it once every sibling has finished, so
    the loop parks the run); `PermissionRejected` may propagate too (batch counts it as a failed
    sub-call, as OpenCode does). Without a runner, batch executes sub-calls directly with no parts.
    """

    def __call__(self, tool: str, parameters: dict[str, Any], *, index: int) -> ToolResult: ...


# Keys the loop puts in `ToolContext.extra` (all optional unless a tool says otherwise):
#   "session":     the conversations.models.Session row (todowrite/todoread need it)
#   "tools":       dict[str, Tool] offered this step (batch resolves sub-calls against it)
#   "run_subcall": a SubcallRunner (batch)
#   "in_batch":    True inside a batch sub-call (batch refuses to nest)
#   "awaiting":    what the call parked on last time (a request's id, a child session's), on its re-run
#   "by_user":     True for a call the person asked for (a prompt's subtask part), not the model
#   "lsp":         a callable giving the workspace's opencode.json `lsp` key, read once per run (without
#                  it, the file tools ask the sandbox, which reads the file each time)
#   "formatter":   the same for its `formatter` key (hangar.engine.tools.formatting)
EXTRA_SESSION = "session"
EXTRA_AGENTS = "agents"  # the workspace's own agents, by name (hangar.engine.agents.custom_agents)
EXTRA_TOOLS = "tools"
EXTRA_RUN_SUBCALL = "run_subcall"
EXTRA_IN_BATCH = "in_batch"
EXTRA_AWAITING = "awaiting"
EXTRA_BY_USER = "by_user"
EXTRA_LSP = "lsp"
EXTRA_FORMATTER = "formatter"


class Tool(Protocol):
    # Read-only: each tool sets them as class attributes, `parameters` to its own model class.
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def parameters(self) -> type[BaseModel]: ...
    def __hash__(self) -> int: ...  # the registry caches a tool's schema by the tool object

    # `args` is an instance of the tool's own `parameters` (execute_tool validates it first): each tool
    # names that class in its signature, which a protocol over every tool cannot, so it takes Any here.
    def execute(self, args: Any, ctx: ToolContext) -> ToolResult: ...
