"""Running one of the workspace's commands (OpenCode's `command`; hangar.engine.agents.custom_commands): the
template filled and, where the bash rules allow, its shell snippets run, its `@path` references made file
parts (read for the prompt: hangar.engine.turn.prompt_files), then prompted as any prompt is
(hangar.engine.services.session_prompt)."""

from __future__ import annotations

from typing import Any

from hangar.accounts.actors import Actor
from hangar.conversations.models import Message, Session
from hangar.engine.agents import custom_commands, shell_parse
from hangar.engine.agents import permissions as perm
from hangar.engine.agents.builtin_commands import with_builtins
from hangar.engine.agents.secret_env import masker_for
from hangar.engine.mcp import prompts as mcp_prompts
from hangar.engine.services import (
    SUBTASK_LIMITS,
    PromptRejected,
    prompt_agent,
    require_member,
    session_prompt,
)
from hangar.engine.turn.prompt_files import REF, file_refs
from hangar.engine.workspace.sandboxes import sandbox_for_request


def session_command(
    *,
    actor: Actor,
    session: Session,
    command: str,
    arguments: str = "",
    agent: str | None = None,
    model: dict[str, Any] | None = None,
    message_id: str | None = None,
    files: list[dict[str, Any]] | None = None,
) -> Message:
    """Run one of the workspace's commands (OpenCode's `command`): its template, filled from `arguments`,
    becomes the prompt, by the command's agent and model unless the request names its own. A `subtask`
    command (or one whose agent is a subagent) runs as a task in a child session. PromptRejected naming
    `command` when there is no such command, with the reason when its file does not parse."""
    require_member(actor, session)
    if isinstance(command, str) and ":" in command:  # `<server>:<prompt>`: an MCP server's prompt
        return _mcp_prompt_command(
            actor, session, command.lstrip("/"), arguments, agent, model, message_id, files
        )
    if not isinstance(command, str) or not custom_commands.NAME.fullmatch(command.lstrip("/")):
        raise PromptRejected(f"no command named {str(command)[:80]!r}", field="command")
    if not isinstance(arguments, str) or len(arguments) > SUBTASK_LIMITS["prompt"]:
        raise PromptRejected("arguments must be text of at most 100000 characters", field="arguments")
    try:
        found = custom_commands.find_command(
            command.lstrip("/"),
            with_builtins(custom_commands.read_workspace_commands(sandbox_for_request(session))),
        )
    except LookupError as exc:
        raise PromptRejected(str(exc.args[0]), field="command") from None
    chosen = prompt_agent(session, agent or found.agent)
    text = custom_commands.render(found.template, arguments)
    if custom_commands.SHELL.search(text):
        ruleset, policy = perm.ruleset_for(session, chosen.permission, actor.user_id)

        def allowed(command: str) -> bool:
            # Every simple command in it, and every folder outside the workspace it names, as the bash
            # tool asks them (hangar.engine.agents.shell_parse): the text after the arguments were filled in.
            found = shell_parse.check(command)
            asks = [("bash", found.patterns), ("external_directory", found.directories)]
            return all(
                perm.decide(name, patterns, ruleset=ruleset, org_policy=policy) == perm.ALLOW
                for name, patterns in asks
                if patterns
            )

        try:
            text = custom_commands.expand_shell(text, sandbox_for_request(session), allowed)
            text = masker_for(session.project).text(text)  # what the snippets printed goes to the model
        except ValueError as exc:
            raise PromptRejected(f"command {found.name!r}: {exc}", field="command") from None
    model = model or found.model
    refs = file_refs(text, sandbox_for_request(session)) if REF.search(text) else []
    if found.subtask or chosen.mode == "subagent":
        parts: list[dict[str, Any]] = [
            {
                "type": "subtask",
                "agent": chosen.name,
                "description": (found.description or found.name)[:200],
                "prompt": text,
                "command": found.name,
                **({"model": model} if model else {}),
            }
        ]
        agent = None  # the session keeps its own agent; the task runs the command's
    else:
        parts, agent = [{"type": "text", "text": text}, *refs], chosen.name
    return session_prompt(
        actor=actor,
        session=session,
        parts=parts + [dict(f) for f in files or []],
        agent=agent,
        model=model,
        message_id=message_id,
    )


def _mcp_prompt_command(
    actor: Actor,
    session: Session,
    command: str,
    arguments: str,
    agent: str | None,
    model: dict[str, Any] | None,
    message_id: str | None,
    files: list[dict[str, Any]] | None,
) -> Message:
    """An MCP prompt as a command (hangar.engine.mcp.prompts): the message is stored with the prompt to
    fetch, and the run's worker fetches it from the server."""
    if not isinstance(arguments, str) or len(arguments) > SUBTASK_LIMITS["prompt"]:
        raise PromptRejected("arguments must be text of at most 100000 characters", field="arguments")
    prompt = mcp_prompts.find(session.project, command, actor.user_id)
    if prompt is None:
        raise PromptRejected(f"no command named {command[:80]!r}", field="command")
    masker = masker_for(session.project)
    try:
        values = mcp_prompts.prompt_arguments(prompt, arguments)
    except mcp_prompts.PromptArgumentsError as exc:
        raise PromptRejected(str(exc), field="arguments") from None
    values = {name: masker.text(value) for name, value in values.items()}
    part = mcp_prompts.pending_part(command, masker.text(arguments), prompt, values)
    return session_prompt(
        actor=actor,
        session=session,
        parts=[dict(f) for f in files or []],
        agent=agent,
        model=model,
        message_id=message_id,
        mcp_prompt=part,
    )
