"""MCP prompts as commands, as OpenCode lists them (its Command with `source: "mcp"`): named
`<server>:<prompt>` (hangar.engine.mcp.listings.key), one hint `$N` per argument. Running one stores the user
message at once with a text part that says which prompt to fetch (`metadata.mcpPrompt`, pending); the run's
worker fetches it (`prompts/get`, hangar.engine.mcp.expand) and the part's text becomes the prompt's, so
the server's credentials and its network stay in the worker (or the sandbox, for a local server).

A command's argument string fills the prompt's arguments in order, as OpenCode fills its `$1`, `$2`...
placeholders: words (quotes group), the last argument taking the rest."""

from __future__ import annotations

import shlex
from typing import Any

from hangar.engine.mcp import listings
from hangar.projects.models import Project

PENDING = "mcpPrompt"  # the text part's metadata key while the worker has yet to fetch the prompt
MAX_ARGUMENT = 10_000  # characters of one argument's value


class PromptArgumentsError(ValueError):
    pass


def command_infos(project: Project, member: int | None) -> list[dict[str, Any]]:
    """OpenCode's Command of each prompt the project's servers listed at their last run (an OAuth server's:
    those listed with `member`'s own token)."""
    out = []
    for name, prompt in listings.prompts(project, member).items():
        info: dict[str, Any] = {
            "name": name,
            "source": "mcp",
            "template": "",  # fetched from the server when the command runs
            "hints": [f"${n}" for n in range(1, len(prompt["arguments"]) + 1)],
        }
        if prompt.get("description"):
            info["description"] = prompt["description"]
        out.append(info)
    return out


def find(project: Project, command: str, member: int | None) -> dict[str, Any] | None:
    """The listed prompt a command names (`<server>:<prompt>`), with its `client` (the server)."""
    return listings.prompts(project, member).get(command)


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unbalanced quote: plain words
        return arguments.split()


def prompt_arguments(prompt: dict[str, Any], arguments: str) -> dict[str, str]:
    """The prompt's arguments from a command's argument string (module doc); PromptArgumentsError naming a
    required one that is missing."""
    words = _words(arguments)
    names = [a["name"] for a in prompt["arguments"]]
    out: dict[str, str] = {}
    for index, name in enumerate(names):
        if index >= len(words):
            break
        value = " ".join(words[index:]) if index == len(names) - 1 else words[index]
        out[name] = value[:MAX_ARGUMENT]
    missing = [a["name"] for a in prompt["arguments"] if a.get("required") and a["name"] not in out]
    if missing:
        raise PromptArgumentsError(f"the prompt {prompt['name']!r} needs the argument {missing[0]!r}")
    return out


def pending_part(
    command: str, arguments: str, prompt: dict[str, Any], values: dict[str, str]
) -> dict[str, Any]:
    """The user message's text part until the worker fetches the prompt: the command as typed."""
    text = f"/{command} {arguments}".strip()
    pending = {"server": prompt["client"], "name": prompt["name"], "arguments": values, "pending": True}
    return {"type": "text", "text": text, "metadata": {PENDING: pending}}
