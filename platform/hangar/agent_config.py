"""An agent's definition fields checked, as a team writes them in a workspace file's frontmatter
(hangar.engine.custom_agents) or in a project's `agents` config (hangar.projects): one validator for both,
here because both layers use it and it needs nothing of either. Also OpenCode's permission config shape
(`{"edit": "deny", "bash": {"git *": "allow"}}`) read as a ruleset (`rules_from_config`)."""

from __future__ import annotations

import re
from typing import Any

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_PROMPT_BYTES = 64 * 1024
MODES = ("primary", "subagent", "all")
ACTIONS = ("allow", "ask", "deny")
FIELDS = {
    "description",
    "mode",
    "model",
    "temperature",
    "steps",
    "maxSteps",
    "permission",
    "tools",
    "prompt",
    "hidden",
    "disable",
    "color",
    "top_p",
    "options",
}


class AgentConfigError(ValueError):
    """An agent definition that cannot be used; the message names where and why."""


def rules_from_config(config: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Accept a ruleset list or OpenCode's config shape `{"edit": "deny", "bash": {"git *": "allow"}}`."""
    if not config:
        return []
    if isinstance(config, list):
        return [dict(rule) for rule in config]
    rules = []
    for permission, value in config.items():
        if isinstance(value, str):
            rules.append({"permission": permission, "pattern": "*", "action": value})
        else:
            rules += [{"permission": permission, "pattern": p, "action": a} for p, a in value.items()]
    return rules


def clean_agent_fields(name: str, fields: dict[str, Any], where: str, prompt: str = "") -> dict[str, Any]:
    """The keyword arguments of an engine Agent from definition fields, every field checked."""
    if not NAME.fullmatch(name):
        raise AgentConfigError(f"{where}: an agent name is letters, digits, '.', '_' and '-' (at most 64)")
    unknown = set(fields) - FIELDS
    if unknown:
        raise AgentConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    mode = fields.get("mode", "all")
    if mode not in MODES:
        raise AgentConfigError(f"{where}: mode must be one of {', '.join(MODES)}")
    description = fields.get("description", "")
    if not isinstance(description, str) or len(description) > 2000:
        raise AgentConfigError(f"{where}: description must be a string of at most 2000 characters")
    steps = fields.get("steps", fields.get("maxSteps"))
    if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or not 0 < steps <= 1000):
        raise AgentConfigError(f"{where}: steps must be a whole number from 1 to 1000")
    temperature = fields.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool) or not isinstance(temperature, int | float) or not 0 <= temperature <= 2
    ):
        raise AgentConfigError(f"{where}: temperature must be a number from 0 to 2")
    prompt = fields.get("prompt", prompt)
    if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT_BYTES:
        raise AgentConfigError(f"{where}: the prompt must be text of at most {MAX_PROMPT_BYTES} bytes")
    return {
        "name": name,
        "mode": mode,
        "description": description,
        "hidden": bool(fields.get("hidden", False)),
        "permission": _rules(fields, where),
        "steps": steps,
        "temperature": float(temperature) if temperature is not None else None,
        "prompt_text": prompt or None,
        "model": _model(fields.get("model"), where),
        "native": False,
    }


def _rules(fields: dict[str, Any], where: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    tools = fields.get("tools") or {}
    if not isinstance(tools, dict) or not all(isinstance(v, bool) for v in tools.values()):
        raise AgentConfigError(f"{where}: tools must map tool names to true or false")
    rules += [
        {"permission": str(tool), "pattern": "*", "action": "deny"} for tool, on in tools.items() if not on
    ]
    config = fields.get("permission")
    if config is None:
        return rules
    if not isinstance(config, dict | list):
        raise AgentConfigError(f"{where}: permission must be a mapping (edit: deny) or a list of rules")
    try:
        parsed = rules_from_config(config)
    except (AttributeError, TypeError, ValueError):
        raise AgentConfigError(
            f"{where}: permission values must be allow, ask, deny or a mapping of them"
        ) from None
    for rule in parsed:
        if rule.get("action") not in ACTIONS or not all(
            isinstance(rule.get(k), str) and 0 < len(rule[k]) <= 500 for k in ("permission", "pattern")
        ):
            raise AgentConfigError(
                f"{where}: permission rule {rule!r} needs a permission, pattern and allow/ask/deny"
            )
    return rules + [{k: r[k] for k in ("permission", "pattern", "action")} for r in parsed]


def _model(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    provider, _, model = value.partition("/") if isinstance(value, str) else ("", "", "")
    if not provider or not model or len(value) > 200:
        raise AgentConfigError(f"{where}: model must be provider/model, e.g. anthropic/claude-sonnet-4")
    return {"providerID": provider, "modelID": model}
