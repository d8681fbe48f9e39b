"""Which servers said their tools changed (`notifications/tools/list_changed`), so that a run offers the
new list at its next step without listing every server at every step.

Each (project, server) has a tools version in this process: a remote server's held session
(hangar.engine.mcp.remote) bumps it when the notification arrives, a local server's answers carry the
version the in-container agent keeps (sandbox/agent/mcpservers.py). The run's catalog
(hangar.engine.mcp.tools.McpCatalog) remembers the version it listed a server's tools at and lists them again
only when it moved: a dictionary lookup per server per step. No SDK import here: the catalog reads versions
in processes that never open a remote session."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

TOOLS_CHANGED = "notifications/tools/list_changed"

_lock = threading.Lock()
_versions: dict[tuple[str, str], int] = {}


def version(scope: str, server: str) -> int:
    return _versions.get((scope, server), 0)


def bump(scope: str, server: str) -> None:
    with _lock:
        _versions[(scope, server)] = _versions.get((scope, server), 0) + 1


def on_message(scope: str, server: str) -> Callable[[Any], Awaitable[None]]:
    """A held session's `message_handler`: the SDK hands it every server notification (and transport
    errors, which the call that meets them reports)."""

    async def handle(message: Any) -> None:
        if getattr(message, "method", None) == TOOLS_CHANGED:
            bump(scope, server)

    return handle
