"""An agent's definition fields checked, as a team writes them in a workspace file's frontmatter
(hangar.engine.agents.custom_agents) or in a project's `agents` config (hangar.projects): one validator for both,
here because both layers use it and it needs nothing of either. Also OpenCode's permission config shape
(`{"edit": "deny", "bash": {"git *": "allow"}}`) read as a ruleset (`rules_from_config`).

Both come from a tenant, so nothing here trusts their shape: a workspace's YAML is parsed with aliases
refused and nesting bounded (`load_frontmatter`: a ~700-byte alias bomb once became a 39 MB error string),
every value is bounded in depth, count and size before a field is read (`check_bounded`), and an error
names a value by its place, never by printing it back."""

from __future__ import annotations

import re
from typing import Any

import yaml

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_PROMPT_BYTES = 64 * 1024
MAX_DEPTH = 12  # mappings and lists inside one another
MAX_VALUES = 4000  # every scalar, list and mapping of one definition
MAX_TEXT = 64 * 1024  # one string, key or value
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


class _Refused(yaml.YAMLError):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses aliases (an alias shares a node, so a few bytes can stand for
    billions of values to whatever walks the result) and nesting deeper than MAX_DEPTH (the composer
    recurses: thousands of `[` ran out of Python's stack)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            raise _Refused("uses a YAML alias (*name): aliases are not accepted")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH + 1:  # the frontmatter's own mapping is the first level
                raise _Refused(f"nests deeper than {MAX_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_frontmatter(text: str, where: str, line_offset: int = 0) -> dict[str, Any]:
    """A definition's YAML frontmatter as a mapping, bounded (no aliases, depth, count and size:
    `check_bounded`). Any failure of the parser is an AgentConfigError naming `where`: PyYAML raises
    more than YAMLError (ValueError from a `!!float x`, RecursionError...)."""
    try:
        meta = yaml.load(text, Loader=_BoundedLoader) or {}  # a SafeLoader, bounded
    except _Refused as exc:
        raise AgentConfigError(f"{where}: the frontmatter {exc}") from None
    except Exception as exc:  # the parser's every failure, whatever its type
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1 + line_offset})" if mark is not None else ""
        raise AgentConfigError(f"{where}: the frontmatter is not valid YAML{at}") from None
    if not isinstance(meta, dict):
        raise AgentConfigError(f"{where}: the frontmatter must be a mapping of fields")
    for key, value in meta.items():
        check_bounded(value, where, str(key)[:64])
    return meta


def check_bounded(value: Any, where: str, field: str) -> None:
    """`value` is JSON-shaped (text, numbers, true/false, null, lists, mappings with text keys), at most
    MAX_DEPTH deep, MAX_VALUES values and MAX_TEXT per string. Walked with a stack, never recursion."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise AgentConfigError(f"{where}: {field} holds more than {MAX_VALUES} values")
        if depth > MAX_DEPTH:
            raise AgentConfigError(f"{where}: {field} nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, inner in item.items():
                if not isinstance(key, str) or len(key) > MAX_TEXT:
                    raise AgentConfigError(
                        f"{where}: {field} has a key that is not text of at most {MAX_TEXT}"
                    )
                stack.append((inner, depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
        elif isinstance(item, str):
            if len(item) > MAX_TEXT:
                raise AgentConfigError(f"{where}: {field} holds text longer than the {MAX_TEXT} at most")
        elif item is not None and not isinstance(item, bool | int | float):
            raise AgentConfigError(
                f"{where}: {field} must hold only text, numbers, true/false, lists and mappings"
            )


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
        names = ", ".join(sorted(str(u)[:64] for u in unknown)[:20])
        raise AgentConfigError(f"{where}: unknown field(s) {names}")
    for field, value in fields.items():
        check_bounded(value, where, field)
    options = fields.get("options", {})
    if not isinstance(options, dict):
        raise AgentConfigError(f"{where}: options must be a mapping of option names to values")
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
    for number, rule in enumerate(parsed, 1):
        if rule.get("action") not in ACTIONS or not all(
            isinstance(rule.get(k), str) and 0 < len(rule[k]) <= 500 for k in ("permission", "pattern")
        ):
            # Named by its place: the rule is the tenant's, and printing it back is theirs to size.
            raise AgentConfigError(
                f"{where}: permission rule {number} needs a permission, pattern and allow/ask/deny"
                " (a permission and a pattern are text of at most 500)"
            )
    return rules + [{k: r[k] for k in ("permission", "pattern", "action")} for r in parsed]


def _model(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    provider, _, model = value.partition("/") if isinstance(value, str) else ("", "", "")
    if not provider or not model or len(value) > 200:
        raise AgentConfigError(f"{where}: model must be provider/model, e.g. anthropic/claude-sonnet-4")
    return {"providerID": provider, "modelID": model}
