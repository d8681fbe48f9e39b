"""What a file tool tells the model after a change: the language server's errors, worded as OpenCode's
write/edit/apply_patch word them (models are tuned on that text), and the full findings in
`metadata.diagnostics`.

The servers run in the sandbox (sandbox/agent/lsp.py) and start on the first file of their language; a
missing, slow or crashed server gives no findings and never fails the tool call.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings

from hangar.engine.tools.base import EXTRA_LSP, ToolContext
from sandbox.protocol import SandboxError

MAX_PER_FILE = 20
MAX_OTHER_FILES = 5
SEVERITY = {1: "ERROR", 2: "WARN", 3: "INFO", 4: "HINT"}
Diagnostics = dict[str, list[dict[str, Any]]]


def wait_ms() -> int:
    """How long a tool waits for a file's findings after changing it (HANGAR_LSP_WAIT_MS)."""
    wait: int = settings.HANGAR_LSP_WAIT_MS
    return wait


def mode() -> str:
    """HANGAR_LSP: "auto" (default) runs the servers a workspace's opencode.json turns on, as OpenCode
    does; "on" runs them unless it turns them off; "off" runs none."""
    value = str(settings.HANGAR_LSP)
    return value if value in ("auto", "on", "off") else "auto"


# What the sandbox has language servers for (sandbox/agent/lsp.py): other files never cost a round trip.
LANGUAGE_EXTENSIONS = frozenset({".py", ".pyi", ".ts", ".mts", ".cts", ".tsx", ".js", ".mjs", ".cjs", ".jsx"})


def _has_server(ctx: ToolContext, path: str) -> bool:
    """Whether `path` may have a server to ask, without a round trip where the run knows its workspace's
    opencode.json: in "auto" a workspace that does not set `lsp` runs none, and `lsp: false` turns them
    off in either mode (the sandbox still applies a per-server `disabled`)."""
    run_mode = mode()
    if run_mode == "off" or os.path.splitext(path)[1].lower() not in LANGUAGE_EXTENSIONS:
        return False
    workspace_lsp = ctx.extra.get(EXTRA_LSP)
    if workspace_lsp is None:  # a call outside a run's step: the sandbox reads the file
        return True
    setting = workspace_lsp()
    return setting is not False and (setting is not None or run_mode == "on")


def warm(ctx: ToolContext, path: str) -> None:
    """After a read, as OpenCode's read tool does: the file's server starts (in the background) so that
    the edit that usually follows finds it ready."""
    if _has_server(ctx, path):
        try:
            ctx.sandbox.lsp_touch(path, wait_ms=0, mode=mode())
        except SandboxError:
            pass


def collect(ctx: ToolContext, path: str) -> Diagnostics:
    """The findings after `path` changed: this file's and up to five other files', at most twenty
    each (what the model is shown, and what the tool part keeps)."""
    if not _has_server(ctx, path):
        return {}
    try:
        found = ctx.sandbox.lsp_touch(path, wait_ms=wait_ms(), mode=mode())
    except SandboxError:
        return {}
    kept = [path] if path in found else []
    kept += [p for p in found if p != path][:MAX_OTHER_FILES]
    return {p: found[p][:MAX_PER_FILE] for p in kept}


def pretty(diagnostic: dict[str, Any]) -> str:
    start = ((diagnostic.get("range") or {}).get("start")) or {}
    severity = SEVERITY.get(diagnostic.get("severity") or 1, "ERROR")
    return f"{severity} [{int(start.get('line', 0)) + 1}:{int(start.get('character', 0)) + 1}] {diagnostic.get('message', '')}"


def _block(path: str, errors: list[dict[str, Any]]) -> str:
    shown = "\n".join(pretty(d) for d in errors[:MAX_PER_FILE])
    more = f"\n... and {len(errors) - MAX_PER_FILE} more" if len(errors) > MAX_PER_FILE else ""
    return f'<diagnostics file="{path}">\n{shown}{more}\n</diagnostics>'


def errors_in(diagnostics: Diagnostics, path: str) -> list[dict[str, Any]]:
    return [d for d in diagnostics.get(path, []) if (d.get("severity") or 1) == 1]


def this_file(diagnostics: Diagnostics, path: str) -> str:
    """The text edit and apply_patch append for one changed file ("" when it has no errors)."""
    errors = errors_in(diagnostics, path)
    if not errors:
        return ""
    return f"\n\nLSP errors detected in this file, please fix:\n{_block(path, errors)}"


def with_other_files(diagnostics: Diagnostics, path: str) -> str:
    """write's text: this file's errors, then up to five other files' (a write can break importers)."""
    text = this_file(diagnostics, path)
    others = 0
    for other in diagnostics:
        errors = errors_in(diagnostics, other)
        if other == path or not errors or others >= MAX_OTHER_FILES:
            continue
        others += 1
        text += f"\n\nLSP errors detected in other files:\n{_block(other, errors)}"
    return text
