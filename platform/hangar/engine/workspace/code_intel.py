"""What the session's language servers know, for OpenCode's /lsp and /find/symbol. Both read only a
sandbox that runs: asking which servers run, or which symbols they know, never starts, resumes or
prepares anything (and a hibernated sandbox has no servers)."""

from __future__ import annotations

from typing import Any

from hangar.conversations.models import Session
from sandbox.protocol import Sandbox, SandboxError

MAX_SYMBOLS = 200
STATUS_FIELDS = ("id", "name", "root", "status")


def running_sandbox(session: Session) -> Sandbox | None:
    from hangar.engine.workspace.sandboxes import manager

    if not manager().is_running(session.pk):
        return None
    return manager().connect(session.pk)


def language_servers(session: Session | None) -> list[dict[str, Any]]:
    """OpenCode's LSPStatus rows: the servers the session's sandbox has started."""
    box = running_sandbox(session) if session is not None else None
    if box is None:
        return []
    try:
        rows = box.lsp_status()
    except SandboxError:
        return []
    return [{key: row[key] for key in STATUS_FIELDS} for row in rows]


def find_symbols(session: Session | None, query: str) -> list[dict[str, Any]]:
    """OpenCode's Symbol rows ({name, kind, location: {uri, range}}) from the running servers' workspace
    symbol search."""
    box = running_sandbox(session) if session is not None else None
    if box is None:
        return []
    try:
        found = box.lsp_query("workspaceSymbol", text=query) or []
    except SandboxError:
        return []
    symbols = []
    for item in found:
        location = item.get("location") if isinstance(item, dict) else None
        if not isinstance(location, dict) or "range" not in location:
            continue  # a WorkspaceSymbol without a range: OpenCode's Symbol requires one
        symbols.append(
            {
                "name": str(item.get("name", ""))[:500],
                "kind": int(item.get("kind") or 0),
                "location": {"uri": str(location.get("uri", "")), "range": location["range"]},
            }
        )
    return symbols[:MAX_SYMBOLS]
