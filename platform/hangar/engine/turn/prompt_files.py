"""A prompt's files, read for it as OpenCode's createUserMessage does, so the model sees what the person
pointed at (`@src/app.py` in the TUI, a file a command's template names):

- a `file://` part naming a file in the sandbox: "Called the Read tool with the following input: ..."
  and the read tool's output, as synthetic text parts ahead of the part itself (`?start=&end=` in the URL
  reads those lines); an image or PDF becomes a `data:` URL part (sent when the model takes them);
- a folder: its listing, as the list tool gives it;
- a text `data:` part: its decoded text;
- an MCP resource (its `source`) is left to the worker (hangar.engine.mcp.resources);
- anything else is kept as it is. What cannot be read is said in a synthetic text: the prompt is never
  refused for it. The person asked for the file: no permission is asked (OpenCode's, too).

`file_refs` finds a command template's `@path` references (OpenCode's ConfigMarkdown.files) and makes
file parts of those that exist in the workspace.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse

from hangar.engine.session import readmarks
from hangar.engine.session.history import READ_NOTE
from hangar.engine.tools.base import ToolContext, ToolError, ToolResult
from hangar.engine.tools.common import relative, resolve
from hangar.engine.tools.ls import ListParams, ListTool
from hangar.engine.tools.read import ReadParams, ReadTool
from sandbox.protocol import Sandbox, SandboxError

MAX_FILES = 20  # read for one prompt; more are kept as plain references
MAX_TEXT = 256 * 1024  # of a text data: URL's decoded content
REF = re.compile(r"(?<![\w`])@(\.?[^\s`,.]*(?:\.[^\s`,.]+)*)")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "synthetic": True}


def _context(session_id: str, agent: str, sandbox: Sandbox) -> ToolContext:
    return ToolContext(
        session_id=session_id,
        message_id="",
        call_id="",
        agent=agent,
        sandbox=sandbox,
        abort=threading.Event(),
        ask=lambda *_args: None,
        update_metadata=lambda _metadata: None,
        was_read=lambda path: readmarks.was_read(session_id, path),
        mark_read=lambda path: readmarks.mark_read(session_id, path),
    )


def _lines(url: str) -> tuple[int | None, int | None]:
    """OpenCode's `?start=N&end=M` (1-based, inclusive) as the read tool's offset and limit."""
    query = parse_qs(urlparse(url).query)
    try:
        start = int(query["start"][0]) if "start" in query else None
        end = int(query["end"][0]) if "end" in query else None
    except ValueError:
        return None, None
    if start is None:
        return None, None
    offset = max(start, 1)
    return offset, (end - offset + 1 if end is not None and end >= offset else None)


def _read_file(part: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
    path = resolve(unquote(urlparse(part["url"]).path))
    stat = ctx.sandbox.stat(path)
    if stat is not None and stat.type == "dir":
        args: dict[str, Any] = {"filePath": path}
        listing = ListTool().execute(ListParams(path=path), ctx)
        return [
            _text(READ_NOTE + json.dumps(args)),
            _text(listing.output),
            {**part, "mime": "application/x-directory"},
        ]
    offset, limit = _lines(part["url"])
    args = {"filePath": path, **({"offset": offset} if offset else {}), **({"limit": limit} if limit else {})}
    result: ToolResult = ReadTool().execute(ReadParams(**args), ctx)
    out = [_text(READ_NOTE + json.dumps(args))]
    if result.attachments:  # an image or PDF: the file itself, for a model that takes it
        return out + [{**a, "filename": part.get("filename") or relative(path)} for a in result.attachments]
    return [*out, _text(result.output), part]


def _decoded(part: dict[str, Any]) -> str | None:
    header, _, data = part["url"].partition(",")
    try:
        raw = base64.b64decode(data, validate=True) if header.endswith(";base64") else unquote(data).encode()
    except ValueError:
        return None
    return raw[:MAX_TEXT].decode("utf-8", "replace")


def resolve_files(
    parts: list[dict[str, Any]], *, session_id: str, agent: str, sandbox: Callable[[], Sandbox]
) -> list[dict[str, Any]]:
    """`parts` with each readable file part's content ahead of it (module doc). `sandbox` is called only
    if a file is to be read."""
    out: list[dict[str, Any]] = []
    ctx: ToolContext | None = None
    read = 0
    for part in parts:
        url = str(part.get("url", "")) if part.get("type") == "file" else ""
        if (part.get("source") or {}).get("type") == "resource":
            url = ""  # an MCP resource: the worker reads it from its server (hangar.engine.mcp.expand)
        if url.startswith("data:") and part.get("mime") == "text/plain":
            text = _decoded(part)
            if text is not None:
                name = part.get("filename") or "the attached text"
                out += [_text(READ_NOTE + json.dumps({"filePath": name})), _text(text)]
            out.append(part)
        elif url.startswith("file:") and read < MAX_FILES:
            read += 1
            path = resolve(unquote(urlparse(url).path))
            try:
                ctx = ctx or _context(session_id, agent, sandbox())
                out += _read_file(part, ctx)
            except (ToolError, SandboxError, ValueError) as exc:
                out += [_text(f"Read tool failed to read {path} with the following error: {exc}"), part]
        else:
            out.append(part)
    return out


def file_refs(template: str, sandbox: Sandbox) -> list[dict[str, Any]]:
    """File parts for the `@path` references of a command's template that name something in the
    workspace (each once, at most MAX_FILES); other `@words` stay plain text."""
    parts: list[dict[str, Any]] = []
    seen: set[str] = set()
    for match in REF.finditer(template):
        name = match.group(1)
        if not name or name in seen or len(parts) >= MAX_FILES:
            continue
        seen.add(name)
        path = resolve(name)
        try:
            stat = sandbox.stat(path)
        except SandboxError:
            continue
        if stat is None:
            continue
        parts.append(
            {
                "type": "file",
                "url": f"file://{quote(path)}",
                "filename": name,
                "mime": "application/x-directory" if stat.type == "dir" else "text/plain",
            }
        )
    return parts
