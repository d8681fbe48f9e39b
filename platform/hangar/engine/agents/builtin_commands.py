"""The commands every project has, as OpenCode has them built in (`/init`, `/review`), with prompts of our
own (prompts/commands/): `init` writes or updates the workspace's AGENTS.md from what is in the workspace,
`review` reviews the current changes (uncommitted by default; a commit or branch named as its argument).
A workspace command of the same name (.opencode/commands/) replaces one, as a configured command does in
OpenCode. OpenCode runs `review` as a subtask by the session's agent; a Hangar task runs a subagent, so it
is the `general` subagent's."""

from __future__ import annotations

from hangar.engine.agents.custom_commands import Command
from hangar.engine.session.system import PROMPTS
from sandbox.protocol import WORKSPACE


def _template(name: str) -> str:
    return (PROMPTS / "commands" / f"{name}.txt").read_text().replace("${path}", WORKSPACE)


BUILTIN: dict[str, Command] = {
    "init": Command(name="init", template=_template("init"), description="guided AGENTS.md setup"),
    "review": Command(
        name="review",
        template=_template("review"),
        description="review changes [commit|branch|pr], defaults to uncommitted",
        agent="general",
        subtask=True,
    ),
}


def with_builtins(workspace: tuple[dict[str, Command], list[str]]) -> tuple[dict[str, Command], list[str]]:
    """The workspace's commands (read_workspace_commands) over the built-in ones."""
    commands, errors = workspace
    return {**BUILTIN, **commands}, errors
