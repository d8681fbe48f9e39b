"""The worker's half of MCP prompts and resources in a prompt (hangar.engine.mcp.prompts, .resources): at
the start of each step, a user message's text part still pending gets its content — the prompt fetched
(`prompts/get`), the resource read (`resources/read`) — from the run's own clients of the session's servers
(hangar.engine.mcp.tools.McpCatalog: the org's allow-list checked, the project's secrets in the headers of
the project's servers only). The part is rewritten in place (one statement and its event), its content
bounded (hangar.engine.mcp.content) and masked like any text a run stores; a failure becomes the text the
model reads, as OpenCode's "Failed to read MCP resource". Each fetch is audited like a tool call
(`mcp.call`: server, what, ms, bytes; never the arguments or the URI).

Only parts not yet settled are looked at: the step's read returns a user message's parts once per run, and a
run that died midway finds the part still pending and fetches it again."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hangar.conversations import services as store
from hangar.conversations.loop_selectors import StepState
from hangar.conversations.models import Message, Session
from hangar.conversations.run_audit_services import mcp_call_audit
from hangar.engine.agents.secret_env import masker_for
from hangar.engine.mcp import content, prompts, resources
from hangar.engine.mcp.errors import McpError
from hangar.engine.mcp.tools import McpCatalog

MAX_PER_MESSAGE = resources.MAX_PER_PROMPT + 1  # its resources and one prompt


def _pending(part: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    metadata = part.get("metadata") if part.get("type") == "text" else None
    if not isinstance(metadata, dict):
        return None
    for kind in (prompts.PENDING, resources.PENDING):
        entry = metadata.get(kind)
        if isinstance(entry, dict) and entry.get("pending") is True:
            return kind, entry
    return None


def expand_pending(
    session: Session, state: StepState, catalog: McpCatalog, workspace: Callable[[], Any]
) -> None:
    """Fill in the pending parts of the step's unsettled user messages (module doc)."""
    for message in state.messages:
        parts = state.parts.get(message.pk) if message.role == "user" else None
        if not parts:
            continue
        done = 0
        for index, part in enumerate(parts):
            found = _pending(part)
            if found is None:
                continue
            kind, entry = found
            if done >= MAX_PER_MESSAGE:
                text = "Not read: too many MCP prompts and resources in one message."
            else:
                text = _fetch(session, catalog.clients(session, workspace), kind, entry)
            done += 1
            text = masker_for(session.project).text(text)
            settled = {k: v for k, v in entry.items() if k in ("server", "name")}
            # The reader keeps this very list for the settled message: the step's history sees the content.
            parts[index] = _write(message, {**part, "text": text, "metadata": {kind: settled}})


def _write(message: Message, data: dict[str, Any]) -> dict[str, Any]:
    stored: dict[str, Any] = store.part_upsert(message=message, data=data).data
    return stored


def _fetch(session: Session, clients: dict[str, Any], kind: str, entry: dict[str, Any]) -> str:
    server = str(entry.get("server", ""))
    prompt = kind == prompts.PENDING
    what = f"the MCP prompt {entry.get('name')}" if prompt else f"MCP resource {entry.get('name')}"
    client = clients.get(server)
    if client is None:
        return f"Failed to read {what}: the MCP server {server} is not available to this session."
    started, text, ok = time.monotonic(), "", False
    try:
        if prompt:
            arguments = entry.get("arguments")
            values = {str(k): str(v) for k, v in (arguments if isinstance(arguments, dict) else {}).items()}
            text = content.prompt_text(client, str(entry.get("name", "")), values)
        else:
            text = content.resource_text(client, str(entry.get("uri", "")))
        ok = True
    except McpError as exc:
        text = f"Failed to read {what}: {exc}"
    mcp_call_audit(
        session=session,
        server=server,
        tool="prompts/get" if prompt else "resources/read",
        data={
            "ms": round((time.monotonic() - started) * 1000),
            "bytes": len(text.encode()) if ok else 0,
            "ok": ok,
            **({"prompt": str(entry.get("name", ""))[:200]} if prompt else {}),
        },
    )
    return text
