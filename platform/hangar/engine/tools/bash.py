"""bash: run a shell command in the session's sandbox, streaming its output into the tool part.

Permission `bash` is asked with one pattern per simple command and an `always` suggestion of its prefix
(`git status *`, `ls *`), and `external_directory` for the folders outside the workspace it names or
runs in, from a parse of the command with tree-sitter's bash grammar (hangar.engine.agents.shell_parse), as
OpenCode's bash tool does.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from hangar.engine.agents import secret_env, shell_parse
from hangar.engine.tools.base import EXTRA_SESSION, ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import description, resolve
from hangar.engine.tools.truncate import output_path, truncate_output
from sandbox.protocol import WORKSPACE

DEFAULT_TIMEOUT_MS = 120_000  # a command the model gives no timeout (OpenCode's default)
DEFAULT_LIMIT_MS = 600_000  # the longest any command may run, when no project says otherwise
METADATA_CHARS = 30_000  # the running part shows the tail of the output, as OpenCode's card does


class BashParams(BaseModel):
    command: str = Field(description="The command to execute")
    timeout: int | None = Field(default=None, description="Optional timeout in milliseconds")
    workdir: str | None = Field(
        default=None,
        description=f"The working directory to run the command in. Defaults to {WORKSPACE}. "
        "Use this instead of 'cd' commands.",
    )
    description: str = Field(
        description="Clear, concise description of what this command does in 5-10 words. Examples:\n"
        "Input: ls\nOutput: Lists files in current directory\n\n"
        "Input: git status\nOutput: Shows working tree status\n\n"
        "Input: npm install\nOutput: Installs package dependencies",
    )


def permission_patterns(command: str) -> tuple[list[str], list[str]]:
    """(patterns, always) for the `bash` permission (hangar.engine.agents.shell_parse). `cd` alone needs none."""
    found = shell_parse.check(command, None)
    return found.patterns, found.always


def command_limit_ms(ctx: ToolContext) -> int:
    """The longest a command may run: the project's `command_timeout_s` (the loop passes the session)."""
    session = ctx.extra.get(EXTRA_SESSION)
    if session is None:  # a tool run outside a session (tests of the tool alone)
        return DEFAULT_LIMIT_MS
    return int(session.project.command_timeout_s) * 1000


class BashTool:
    name = "bash"
    description = description("bash")
    parameters = BashParams

    def execute(self, args: BashParams, ctx: ToolContext) -> ToolResult:
        if args.timeout is not None and args.timeout < 0:
            raise ToolError(f"Invalid timeout value: {args.timeout}. Timeout must be a positive number.")
        limit_ms = command_limit_ms(ctx)
        timeout_ms = min(args.timeout or DEFAULT_TIMEOUT_MS, limit_ms)
        cwd = resolve(args.workdir)
        found = shell_parse.check(args.command, cwd)
        if found.directories:  # as OpenCode: where it runs first, then what runs
            remembered = [d for d in found.directories if d != shell_parse.UNKNOWN]
            ctx.ask("external_directory", found.directories, remembered, {"command": args.command})
        if found.patterns:
            ctx.ask(
                "bash",
                found.patterns,
                found.always,
                {"command": args.command, "description": args.description},
            )
        shown: list[str] = []
        size = 0

        def on_output(chunk: str) -> None:
            nonlocal size
            shown.append(chunk)
            size += len(chunk)
            if size > 2 * METADATA_CHARS:  # keep memory bounded: only the tail is ever shown
                tail = "".join(shown)[-METADATA_CHARS:]
                shown[:] = [tail]
                size = len(tail)
            # Runs on the sandbox connection's reader thread: stay cheap, build the update only if sent.
            ctx.update_metadata(
                lambda: {"output": "".join(shown)[-METADATA_CHARS:], "description": args.description}
            )

        ctx.update_metadata({"output": "", "description": args.description})
        session = ctx.extra.get(EXTRA_SESSION)
        # The secrets scoped to this command line, in this one process's env (its output is masked).
        env = secret_env.command_env(session.project, args.command, cwd) if session is not None else {}
        result = ctx.sandbox.exec(
            args.command,
            cwd=cwd,
            env=env or None,
            timeout_s=timeout_ms / 1000,
            on_output=on_output,
            cancel=ctx.abort,
            full_output_path=output_path(ctx.call_id),
        )
        output = result.output or "(no output)"
        notes = []
        if result.status == "timeout":
            notes.append(f"bash tool terminated command after exceeding timeout {timeout_ms} ms")
        elif result.status == "cancelled":
            notes.append("User aborted the command")
        metadata: dict[str, object] = {
            "output": result.output[-METADATA_CHARS:],
            "exit": result.exit_code,
            "description": args.description,
            "status": result.status,
        }
        # Bounded here, keeping the tail (OpenCode's bash does; the end is where a command says what
        # went wrong), and counted against the complete output, which the sandbox kept when it had to
        # drop the middle: the file the model is pointed at holds every byte.
        spilled = (
            result.full_output_path and result.total_bytes is not None and result.total_lines is not None
        )
        bounded = truncate_output(
            output,
            call_id=ctx.call_id,
            sandbox=ctx.sandbox,
            direction="tail",
            total=(result.total_bytes or 0, result.total_lines or 0) if spilled else None,
            saved_path=result.full_output_path if spilled else None,
        )
        metadata["truncated"] = bounded.truncated
        if bounded.truncated:
            metadata["outputPath"] = bounded.output_path
        output = bounded.content
        if notes:
            output += "\n\n<bash_metadata>\n" + "\n".join(notes) + "\n</bash_metadata>"
        return ToolResult(title=args.description, output=output, metadata=metadata)
