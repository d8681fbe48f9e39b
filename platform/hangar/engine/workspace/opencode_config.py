"""The workspace's own opencode.json, as one run reads it: at the first key it needs, again only after a
step changed the file (hangar.engine.turn.session_sandbox).

Three keys are read from it: `mcp` (hangar.engine.mcp.servers: which servers, within the org's
allow-list), `lsp` (hangar.engine.tools.diagnostics: whether the language servers run) and `formatter`
(hangar.engine.tools.formatting: which formatters run after a file tool's change)."""

from __future__ import annotations

import json
from typing import Any

from sandbox.protocol import FileNotFound, Sandbox, SandboxError

WORKSPACE_CONFIG = "/workspace/opencode.json"
MAX_CONFIG_BYTES = 64 * 1024


def read_workspace_config(sandbox: Sandbox) -> dict[str, Any]:
    """The workspace's opencode.json; {} when there is none, or it cannot be read or parsed (what it
    would set is then simply absent)."""
    try:
        config = json.loads(sandbox.read_bytes(WORKSPACE_CONFIG, max_bytes=MAX_CONFIG_BYTES))
    except (FileNotFound, SandboxError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}
