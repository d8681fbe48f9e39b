"""Which tools a step offers, their JSON schemas for the model, and tool-name repair.

Filtering follows OpenCode (seed 000 §6.2, seed 003 "Tool Filtering per Model"): GPT-5/Codex-style
models get apply_patch instead of edit and write; hidden agents get no tools; explore is read-only;
general (a sub-agent) has no todo tools; explore cannot start tasks. Permission rules (deny-all) are applied by the loop.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from functools import cache
from typing import Any

from hangar.engine.agents.builtin import Agent
from hangar.engine.tools.apply_patch import ApplyPatchTool
from hangar.engine.tools.base import Tool
from hangar.engine.tools.bash import BashTool
from hangar.engine.tools.batch import BatchTool
from hangar.engine.tools.edit import EditTool
from hangar.engine.tools.glob import GlobTool
from hangar.engine.tools.grep import GrepTool
from hangar.engine.tools.invalid import InvalidTool
from hangar.engine.tools.ls import ListTool
from hangar.engine.tools.lsp import LspTool
from hangar.engine.tools.lsp import offered as lsp_offered
from hangar.engine.tools.plan import PlanEnterTool, PlanExitTool
from hangar.engine.tools.question import QuestionTool
from hangar.engine.tools.read import ReadTool
from hangar.engine.tools.skill import SkillTool
from hangar.engine.tools.task import TaskTool, callable_subagents, subagents, task_description
from hangar.engine.tools.todo import TodoReadTool, TodoWriteTool
from hangar.engine.tools.webfetch import WebFetchTool
from hangar.engine.tools.write import WriteTool

ALL: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        BashTool(),
        ReadTool(),
        GlobTool(),
        GrepTool(),
        ListTool(),
        EditTool(),
        WriteTool(),
        ApplyPatchTool(),
        TodoWriteTool(),
        TodoReadTool(),
        BatchTool(),
        WebFetchTool(),
        QuestionTool(),
        PlanExitTool(),
        PlanEnterTool(),
        TaskTool(),
        SkillTool(),
        LspTool(),
        InvalidTool(),
    )
}
HIDDEN_AGENTS = {"title", "summary", "compaction"}
# Run by the loop for a call it could not route (unknown tool, bad JSON), never offered to the model.
INTERNAL_TOOLS = frozenset({"invalid"})
# Tools that cannot change the workspace: a step that used only these needs no closing snapshot. bash and
# batch are not among them (a command, or a batched write, may change anything).
READ_ONLY_TOOLS = frozenset(
    {"read", "glob", "grep", "list", "lsp", "todoread", "todowrite", "webfetch", "invalid"}
)
# What the explore agent is offered: looking around, commands included (OpenCode's explore may run bash),
# so not read-only in the sense above; its permission rules deny edits.
# Seed 003's explore row ("grep, glob, list, bash, webfetch, ... read"): the seed keeps `list` here.
EXPLORE_TOOLS = frozenset({"bash", "read", "glob", "grep", "list", "webfetch", "invalid"})
# Kept in ALL but not offered to build, plan, general or a custom agent: OpenCode 1.18.33's registry has
# neither `list` nor `todoread`, and `batch` sits behind an experimental flag there (seed 003's tool table
# agrees). The seed keeps `list` for explore (above). A call of one of them is answered by `invalid`.
NOT_OFFERED_BY_DEFAULT = frozenset({"list", "todoread", "batch"})
NO_TODOS = {"todowrite", "todoread"}
PATCH_ONLY = {"apply_patch"}
EDIT_WRITE = {"edit", "write"}


def prefers_apply_patch(model_id: str) -> bool:
    """OpenCode's rule: "gpt-" models except gpt-4* and gpt-oss; Hangar adds the codex families."""
    model = model_id.lower().rsplit("/", 1)[-1]
    if "codex" in model:
        return True
    return "gpt-" in model and "oss" not in model and "gpt-4" not in model


def get_tools(agent: str, model_id: str, *, prefer_patch: bool | None = None) -> dict[str, Tool]:
    """The tools offered to `agent` on `model_id`. `prefer_patch` (a project setting) overrides
    the model-family default for apply_patch vs edit/write."""
    if agent in HIDDEN_AGENTS:
        return {}
    use_patch = prefers_apply_patch(model_id) if prefer_patch is None else prefer_patch
    drop = EDIT_WRITE if use_patch else PATCH_ONLY
    if not lsp_offered():
        drop = drop | {"lsp"}
    tools = {name: tool for name, tool in ALL.items() if name not in drop}
    if agent == "explore":
        return {name: tool for name, tool in tools.items() if name in EXPLORE_TOOLS}
    tools = {name: tool for name, tool in tools.items() if name not in NOT_OFFERED_BY_DEFAULT}
    if agent == "general":
        tools = {name: tool for name, tool in tools.items() if name not in NO_TODOS}
    return tools


def repair_tool_name(name: str, available: dict[str, Any] | list[str] | set[str]) -> str | None:
    """The available tool the model meant when it got the case wrong ("Read" → "read"), else None
    (the loop then runs `invalid`)."""
    if name in available:
        return name
    lower = name.lower()
    if lower in available:
        return lower
    return next((candidate for candidate in available if candidate.lower() == lower), None)


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline_refs(copy.deepcopy(defs[node["$ref"].rsplit("/", 1)[-1]]), defs)
        return {
            key: _inline_refs(value, defs) for key, value in node.items() if key not in ("title", "$defs")
        }
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    return node


def _simplify_optional(node: Any) -> Any:
    """`X | None = None` becomes plain optional X (not in `required`), as zod's .optional() emits."""
    if isinstance(node, dict):
        options = node.get("anyOf")
        if isinstance(options, list) and any(o == {"type": "null"} for o in options):
            rest = [o for o in options if o != {"type": "null"}]
            if len(rest) == 1:
                merged = {**rest[0], **{k: v for k, v in node.items() if k not in ("anyOf", "default")}}
                return _simplify_optional(merged)
        return {k: _simplify_optional(v) for k, v in node.items() if not (k == "default" and v is None)}
    if isinstance(node, list):
        return [_simplify_optional(item) for item in node]
    return node


@cache
def tool_schema(tool: Tool) -> dict[str, Any]:
    """One tool's OpenAI function schema: refs inlined, pydantic titles and null-unions removed.
    Cached per tool object: the loop asks every step and the answer never changes."""
    raw = tool.parameters.model_json_schema()
    parameters = _simplify_optional(_inline_refs(raw, raw.get("$defs", {})))
    parameters.setdefault("properties", {})
    parameters["additionalProperties"] = False
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": parameters},
    }


def tool_schemas(tools: dict[str, Tool]) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas for LiteLLM's `tools=` (the loop sends them every step).
    The dicts are shared between calls: callers must not mutate them."""
    return [
        getattr(tool, "function_schema", None) or tool_schema(tool)  # an MCP tool brings its server's schema
        for name, tool in tools.items()
        if name not in INTERNAL_TOOLS
    ]


def tool_schemas_for(
    tools: dict[str, Tool],
    ruleset: list[dict[str, Any]],
    org_policy: list[dict[str, Any]],
    custom_agents: Iterable[Agent] = (),
) -> list[dict[str, Any]]:
    """`tool_schemas`, with the task tool offering only the subagents the caller's rules let it start
    (OpenCode's task description), the workspace's own among them; the shared schemas when the rules
    deny none and the workspace adds none."""
    schemas = tool_schemas(tools)
    if "task" not in tools:
        return schemas
    allowed = callable_subagents(ruleset, org_policy, custom_agents)
    if len(allowed) == len(subagents()):
        return schemas
    return [
        {**s, "function": {**s["function"], "description": task_description(allowed)}}
        if s["function"]["name"] == "task"
        else s
        for s in schemas
    ]


def offered_names(tools: dict[str, Tool]) -> list[str]:
    """The tool names the model is told about (what `tool_schemas` sends)."""
    return [name for name in tools if name not in INTERNAL_TOOLS]
