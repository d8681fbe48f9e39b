"""Commands a team defines in its workspace (seed 003 "Extensibility"): one Markdown file per command
under `.opencode/commands/` (or OpenCode's older `.opencode/command/`), nested folders giving names like
`git/commit`; YAML frontmatter, then the prompt template.

    ---
    description: Write the tests for a module
    agent: build              # the agent that runs it (default: the session's)
    model: anthropic/claude-sonnet-4
    subtask: true             # run it as a subagent task (a child session), as OpenCode does
    ---
    Write tests for $1, covering: $ARGUMENTS

The template's `$ARGUMENTS` is the whole argument string and `$1`, `$2`... its words (quotes group); the
highest-numbered placeholder takes the rest of the words, and a template with no placeholder gets the
arguments appended, as OpenCode fills them. Each !`command` in it is replaced by that command's output,
run in the sandbox, when the bash rules let it run without asking (expand_shell).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from hangar.agent_config import AgentConfigError
from hangar.engine.agents.custom_agents import read_definition
from sandbox.protocol import Sandbox, SandboxError

COMMAND_DIRS = ("/workspace/.opencode/commands", "/workspace/.opencode/command")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}(/[A-Za-z0-9][A-Za-z0-9_.-]{0,63}){0,3}$")
MAX_COMMANDS = 200
FIELDS = {"description", "agent", "model", "subtask", "template"}
PLACEHOLDER = re.compile(r"\$(\d+)")


@dataclass(frozen=True)
class Command:
    name: str
    template: str
    description: str = ""
    agent: str | None = None
    model: dict[str, str] | None = None
    subtask: bool = False

    def info(self) -> dict[str, Any]:
        """OpenCode's Command JSON (GET /command)."""
        out: dict[str, Any] = {"name": self.name, "source": "command", "template": self.template}
        if self.description:
            out["description"] = self.description
        if self.agent:
            out["agent"] = self.agent
        if self.model:
            out["model"] = f"{self.model['providerID']}/{self.model['modelID']}"
        if self.subtask:
            out["subtask"] = True
        hints = sorted(set(PLACEHOLDER.findall(self.template)), key=int)
        out["hints"] = [f"${n}" for n in hints] + (["$ARGUMENTS"] if "$ARGUMENTS" in self.template else [])
        return out


def command_from_fields(name: str, fields: dict[str, Any], where: str, template: str) -> Command:
    unknown = set(fields) - FIELDS
    if unknown:
        raise AgentConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    description, agent = fields.get("description", ""), fields.get("agent")
    if not isinstance(description, str) or len(description) > 2000:
        raise AgentConfigError(f"{where}: description must be a string of at most 2000 characters")
    if agent is not None and (not isinstance(agent, str) or not 0 < len(agent) <= 64):
        raise AgentConfigError(f"{where}: agent must be an agent's name")
    subtask = fields.get("subtask", False)
    if not isinstance(subtask, bool):
        raise AgentConfigError(f"{where}: subtask must be true or false")
    template = fields.get("template", template)
    if not isinstance(template, str) or not template.strip():
        raise AgentConfigError(f"{where}: the command has no template (the text after the frontmatter)")
    model = fields.get("model")
    provider, _, model_id = model.partition("/") if isinstance(model, str) else ("", "", "")
    if model is not None and (not provider or not model_id or len(model) > 200):
        raise AgentConfigError(f"{where}: model must be provider/model, e.g. anthropic/claude-sonnet-4")
    return Command(
        name=name,
        template=template,
        description=description,
        agent=agent,
        model={"providerID": provider, "modelID": model_id} if model else None,
        subtask=subtask,
    )


def read_workspace_commands(sandbox: Sandbox) -> tuple[dict[str, Command], list[str]]:
    """The workspace's commands and, for each file that could not be used, why. Bounded like agents."""
    try:
        paths, _ = sandbox.glob("command*/**/*.md", "/workspace/.opencode")
    except SandboxError:
        return {}, []
    commands: dict[str, Command] = {}
    errors: list[str] = []
    for path in sorted(paths)[:MAX_COMMANDS]:
        root = next((d for d in COMMAND_DIRS if path.startswith(d + "/")), None)
        if root is None:
            continue
        name = path[len(root) + 1 : -len(".md")]
        if name in commands or not NAME.fullmatch(name):
            continue
        try:
            meta, body, where = read_definition(sandbox, path)
            commands[name] = command_from_fields(name, meta, where, body)
        except AgentConfigError as exc:
            errors.append(str(exc))
    return commands, errors


def find_command(name: str, workspace: tuple[dict[str, Command], list[str]]) -> Command:
    """LookupError saying which commands there are or, for a file that did not parse, why."""
    commands, errors = workspace
    if name in commands:
        return commands[name]
    mine = [e for e in errors if str(PurePosixPath(e.split(":", 1)[0]).with_suffix("")).endswith("/" + name)]
    if mine:
        raise LookupError(f"command {name!r} cannot be used: {mine[0]}")
    known = ", ".join(sorted(commands)) or "none in .opencode/commands/"
    raise LookupError(f"no command named {name!r}: {known}")


SHELL = re.compile(r"!`([^`\n]{1,2000})`")
SHELL_TIMEOUT_S = 30
MAX_SHELL_OUTPUT = 10_000


def expand_shell(template: str, sandbox: Sandbox, allowed: Callable[[str], bool]) -> str:
    """The template with each !`command` replaced by what the command printed, run in the session's
    sandbox in the workspace (OpenCode runs them in its directory), at most MAX_SHELL_OUTPUT characters
    each. `allowed(command)`: the bash rules let it run without asking; otherwise ValueError, and nothing
    runs."""
    commands = SHELL.findall(template)
    refused = [c for c in commands if not allowed(c)]
    if refused:
        raise ValueError(f"the rules do not let `{refused[0][:200]}` run without asking (bash)")
    outputs = {}
    for command in dict.fromkeys(commands):
        result = sandbox.exec(command, cwd="/workspace", timeout_s=SHELL_TIMEOUT_S)
        outputs[command] = result.output.strip()[:MAX_SHELL_OUTPUT]
    return SHELL.sub(lambda m: outputs[m.group(1)], template)


def render(template: str, arguments: str) -> str:
    """The template with its placeholders filled from `arguments` (OpenCode's rules, module docstring)."""
    try:
        words = shlex.split(arguments)
    except ValueError:  # an unbalanced quote: plain words
        words = arguments.split()
    numbers = [int(n) for n in PLACEHOLDER.findall(template)]
    last = max(numbers, default=0)

    def fill(match: re.Match[str]) -> str:
        position = int(match.group(1))
        if position > len(words) or position == 0:
            return ""
        return " ".join(words[position - 1 :]) if position == last else words[position - 1]

    text = PLACEHOLDER.sub(fill, template).replace("$ARGUMENTS", arguments)
    if not numbers and "$ARGUMENTS" not in template and arguments.strip():
        text = f"{text}\n\n{arguments}"
    return text
