"""Formatters after write/edit/apply_patch, as OpenCode's `formatter` config sets them (issue 27).

The setting is the workspace opencode.json's `formatter` key, read once per run like `lsp`:
  absent or false  no formatter runs. OpenCode 1.18's own default ("omit or set to false to disable"), and
                   Hangar's: a tool that rewrites what the model just wrote surprises a project that did
                   not ask for it, and each run costs a process start in the sandbox.
  true             the built-ins below run, each on its extensions.
  {name: {...}}    the built-ins run, with per-formatter overrides: `disabled`, `command` ($FILE is the
                   file), `extensions`, `environment`; a new name adds a formatter.
The built-ins are the formatters the sandbox image ships (sandbox/image/tools.py). A command must start
with one of those programs: the workspace file the agent itself may write is otherwise a way to run any
command without the `bash` permission its rules ask for.

Each matching formatter runs in the sandbox, in /workspace, within TIMEOUT_S; one that fails or hangs is
noted in the tool's metadata and never fails the call. The diagnostics that follow read the formatted file.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from hangar.conversations.models import Session
from hangar.engine.tools.base import EXTRA_FORMATTER, ToolContext
from hangar.engine.workspace import code_intel
from hangar.engine.workspace.opencode_config import read_workspace_config
from sandbox.protocol import SandboxError

PRETTIER_EXTENSIONS = (
    ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts", ".json", ".jsonc", ".json5", ".css",
    ".scss", ".less", ".html", ".htm", ".vue", ".md", ".mdx", ".yaml", ".yml", ".graphql", ".gql",
)  # fmt: skip
SHIPPED_PROGRAMS = frozenset({"black", "prettier"})
MAX_FORMATTERS = 20
MAX_WORDS = 32
MAX_WORD = 512
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
EXTENSION = re.compile(r"^\.[A-Za-z0-9_.+-]{1,31}$")


@dataclass(frozen=True)
class Formatter:
    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    environment: dict[str, str] = field(default_factory=dict)
    enabled: bool = True


BUILTINS = (
    Formatter("black", ("black", "--quiet", "$FILE"), (".py", ".pyi")),
    Formatter("prettier", ("prettier", "--write", "--log-level=warn", "$FILE"), PRETTIER_EXTENSIONS),
)


def timeout_s() -> float:
    """How long one formatter may run on one file (HANGAR_FORMAT_TIMEOUT_S)."""
    return float(settings.HANGAR_FORMAT_TIMEOUT_S)


def _words(value: Any) -> tuple[str, ...] | None:
    if not isinstance(value, list) or not 0 < len(value) <= MAX_WORDS:
        return None
    if not all(isinstance(w, str) and 0 < len(w) <= MAX_WORD and "\x00" not in w for w in value):
        return None
    return tuple(value)


def _override(base: Formatter | None, name: str, entry: dict[str, Any]) -> Formatter:
    """`base` with the entry's keys on top; a value of the wrong shape disables the formatter (what it
    would run is then unknown)."""
    command = _words(entry["command"]) if "command" in entry else (base.command if base else None)
    extensions = _words(entry["extensions"]) if "extensions" in entry else (base.extensions if base else None)
    environment = entry.get("environment", {})
    valid = (
        command is not None
        and command[0] in SHIPPED_PROGRAMS
        and extensions is not None
        and all(EXTENSION.match(e) for e in extensions)
        and isinstance(environment, dict)
        and all(
            ENV_NAME.match(str(k)) and isinstance(v, str) and len(v) <= MAX_WORD
            for k, v in environment.items()
        )
    )
    return Formatter(
        name=name,
        command=command or (),
        extensions=tuple(e.lower() for e in extensions or ()),
        environment=dict(environment) if valid else {},
        enabled=valid and entry.get("disabled") is not True,
    )


def formatters(setting: Any) -> list[Formatter]:
    """Every formatter the setting knows, enabled or not (OpenCode's /formatter lists them all)."""
    enabled = setting is True or isinstance(setting, dict)
    found = {f.name: Formatter(f.name, f.command, f.extensions, enabled=enabled) for f in BUILTINS}
    if isinstance(setting, dict):
        for name, entry in list(setting.items())[:MAX_FORMATTERS]:
            if isinstance(name, str) and 0 < len(name) <= 64 and isinstance(entry, dict):
                found[name] = _override(found.get(name), name, entry)
    return list(found.values())


def status(setting: Any) -> list[dict[str, Any]]:
    """OpenCode's FormatterStatus rows."""
    return [
        {"name": f.name, "extensions": list(f.extensions), "enabled": f.enabled} for f in formatters(setting)
    ]


def _setting(ctx: ToolContext) -> Any:
    workspace_formatter = ctx.extra.get(EXTRA_FORMATTER)
    if workspace_formatter is None:  # a call outside a run's step: read the file now
        return read_workspace_config(ctx.sandbox).get("formatter")
    return workspace_formatter()


def format_file(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Run the enabled formatters for `path`'s extension on it, in order. {} when none applies, else
    {"ran": [names that exited 0], "failed": [{"name", "error"}]} for the tool's metadata."""
    setting = _setting(ctx)
    if setting is None or setting is False:
        return {}
    extension = os.path.splitext(path)[1].lower()
    chosen = [f for f in formatters(setting) if f.enabled and extension in f.extensions]
    if not chosen:
        return {}
    ran: list[str] = []
    failed: list[dict[str, str]] = []
    for formatter in chosen:
        command = shlex.join(path if word == "$FILE" else word for word in formatter.command)
        try:
            result = ctx.sandbox.exec(
                command, cwd="/workspace", env=formatter.environment, timeout_s=timeout_s()
            )
        except SandboxError as exc:
            failed.append({"name": formatter.name, "error": str(exc)[:500]})
            continue
        if result.status == "timeout":
            failed.append({"name": formatter.name, "error": f"did not finish within {timeout_s():g} s"})
        elif result.status != "exited" or result.exit_code != 0:
            failed.append(
                {"name": formatter.name, "error": f"exit {result.exit_code}: {result.output[-500:]}"}
            )
        else:
            ran.append(formatter.name)
    return {"ran": ran, "failed": failed}


def note(outcome: dict[str, Any], changed: bool) -> str:
    """What the tool's text adds: only that the file on disk now differs from what the model sent (its
    next edit must match the formatted text)."""
    if not changed or not outcome.get("ran"):
        return ""
    return f"\n\nThe file was reformatted by {', '.join(outcome['ran'])}; read it again before editing it."


def workspace_status(session: Session | None) -> list[dict[str, Any]]:
    """OpenCode's /formatter for the session's workspace: its opencode.json read from its running sandbox.
    A sandbox that does not run is not started to ask (as /lsp): the built-ins are listed, not enabled."""
    box = code_intel.running_sandbox(session) if session is not None else None
    return status(read_workspace_config(box).get("formatter") if box is not None else None)
