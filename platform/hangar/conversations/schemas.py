"""Pydantic models for message and part payloads, matching OpenCode's JSON shapes
(docs/reference/opencode-1.18.33-openapi.json). Every write to Message.data / Part.data goes
through `validate_message` / `validate_part`, so a malformed payload never reaches the store."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Cache(_Shape):
    read: float = 0
    write: float = 0


class Tokens(_Shape):
    total: float | None = None
    input: float = 0
    output: float = 0
    reasoning: float = 0
    cache: Cache = Field(default_factory=Cache)


class StartEnd(_Shape):
    start: int
    end: int | None = None


class ModelRef(_Shape):
    providerID: str
    modelID: str
    variant: str | None = None


class UserMessage(_Shape):
    id: str = Field(pattern=r"^msg")
    sessionID: str = Field(pattern=r"^ses")
    role: Literal["user"]
    time: dict[str, int]
    agent: str
    model: ModelRef
    format: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    system: str | None = None
    tools: dict[str, bool] | None = None


class AssistantMessage(_Shape):
    id: str = Field(pattern=r"^msg")
    sessionID: str = Field(pattern=r"^ses")
    role: Literal["assistant"]
    time: dict[str, int]
    error: dict[str, Any] | None = None
    parentID: str = Field(pattern=r"^msg")
    modelID: str
    providerID: str
    mode: str
    agent: str
    path: dict[str, str]
    summary: bool | None = None
    cost: float = 0
    tokens: Tokens = Field(default_factory=Tokens)
    structured: Any = None
    variant: str | None = None
    finish: str | None = None


Message = Annotated[UserMessage | AssistantMessage, Field(discriminator="role")]


class _PartBase(_Shape):
    id: str = Field(pattern=r"^prt")
    sessionID: str = Field(pattern=r"^ses")
    messageID: str = Field(pattern=r"^msg")


class TextPart(_PartBase):
    type: Literal["text"]
    text: str
    synthetic: bool | None = None
    ignored: bool | None = None
    time: StartEnd | None = None
    metadata: dict[str, Any] | None = None


class ReasoningPart(_PartBase):
    type: Literal["reasoning"]
    text: str
    metadata: dict[str, Any] | None = None
    time: StartEnd


class FilePart(_PartBase):
    type: Literal["file"]
    mime: str
    filename: str | None = None
    url: str
    source: dict[str, Any] | None = None


class ToolStatePending(_Shape):
    status: Literal["pending"]
    input: dict[str, Any]
    raw: str


class ToolStateRunning(_Shape):
    status: Literal["running"]
    input: dict[str, Any]
    title: str | None = None
    metadata: dict[str, Any] | None = None
    time: dict[str, int]


class ToolStateCompleted(_Shape):
    status: Literal["completed"]
    input: dict[str, Any]
    output: str
    title: str
    metadata: dict[str, Any]
    time: dict[str, int]
    attachments: list[dict[str, Any]] | None = None


class ToolStateError(_Shape):
    status: Literal["error"]
    input: dict[str, Any]
    error: str
    metadata: dict[str, Any] | None = None
    time: dict[str, int]


ToolState = Annotated[
    ToolStatePending | ToolStateRunning | ToolStateCompleted | ToolStateError, Field(discriminator="status")
]


class ToolPart(_PartBase):
    type: Literal["tool"]
    callID: str
    tool: str
    state: ToolState
    metadata: dict[str, Any] | None = None


class StepStartPart(_PartBase):
    type: Literal["step-start"]
    snapshot: str | None = None


class StepFinishPart(_PartBase):
    type: Literal["step-finish"]
    reason: str
    snapshot: str | None = None
    cost: float
    tokens: Tokens


class SnapshotPart(_PartBase):
    type: Literal["snapshot"]
    snapshot: str


class PatchPart(_PartBase):
    type: Literal["patch"]
    hash: str
    files: list[str]


class AgentPart(_PartBase):
    type: Literal["agent"]
    name: str
    source: dict[str, Any] | None = None


class SubtaskPart(_PartBase):
    type: Literal["subtask"]
    prompt: str
    description: str
    agent: str
    model: dict[str, str] | None = None
    command: str | None = None


class RetryPart(_PartBase):
    type: Literal["retry"]
    attempt: int
    error: dict[str, Any]
    time: dict[str, int]


class CompactionPart(_PartBase):
    type: Literal["compaction"]
    auto: bool
    overflow: bool | None = None
    tail_start_id: str | None = None


Part = Annotated[
    TextPart
    | ReasoningPart
    | FilePart
    | ToolPart
    | StepStartPart
    | StepFinishPart
    | SnapshotPart
    | PatchPart
    | AgentPart
    | SubtaskPart
    | RetryPart
    | CompactionPart,
    Field(discriminator="type"),
]


class TodoItem(_Shape):
    content: str = Field(min_length=1)
    status: Literal["pending", "in_progress", "completed", "cancelled"] = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


_message_adapter: TypeAdapter = TypeAdapter(Message)
_part_adapter: TypeAdapter = TypeAdapter(Part)


def validate_message(data: dict) -> dict:
    """Validate an OpenCode message payload; returns it normalised (None fields dropped)."""
    return _message_adapter.validate_python(data).model_dump(exclude_none=True)


def validate_part(data: dict) -> dict:
    """Validate an OpenCode part payload; raises pydantic.ValidationError naming the bad field."""
    return _part_adapter.validate_python(data).model_dump(exclude_none=True)
