"""Bound what a tool returns to the model (seed 000 §6.1): over 2000 lines or 50 KB, the model gets
the first lines that fit plus a note, and the full text is saved in the sandbox for `read`.

Where the full text goes: `/tmp/hangar/tool-output/<call id>.txt` inside the session's container.
Outside /workspace on purpose: it never shows up in the project's git status, in shadow-git
snapshots, or in list/glob/grep results; `read` takes absolute paths, so the model can page
through it with offset/limit. /tmp is the container's tmpfs, so the file lives as long as the
container (a recreated sandbox starts without old outputs, which is fine: they are scratch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sandbox.protocol import Sandbox

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
OUTPUT_DIR = "/tmp/hangar/tool-output"
# For the default permission ruleset: reading saved outputs must never need a person's answer
# (OpenCode allows its Truncate.GLOB the same way).
OUTPUT_GLOB = f"{OUTPUT_DIR}/*"


@dataclass(frozen=True)
class Truncated:
    content: str
    truncated: bool
    output_path: str | None = None


def output_path(call_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:120] or "call"
    return f"{OUTPUT_DIR}/{safe}.txt"


def preview(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> tuple[str, int, str] | None:
    """None when `text` fits; else (head that fits, amount removed, unit "lines" or "bytes")."""
    lines = text.split("\n")
    total = len(text.encode("utf-8"))
    if len(lines) <= max_lines and total <= max_bytes:
        return None
    kept: list[str] = []
    size = 0
    hit_bytes = False
    for line in lines[:max_lines]:
        line_size = len(line.encode("utf-8")) + (1 if kept else 0)
        if size + line_size > max_bytes:
            hit_bytes = True
            break
        kept.append(line)
        size += line_size
    if hit_bytes:
        return "\n".join(kept), total - size, "bytes"
    return "\n".join(kept), len(lines) - len(kept), "lines"


def truncate_output(
    text: str, *, call_id: str, sandbox: Sandbox, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES
) -> Truncated:
    cut = preview(text, max_lines, max_bytes)
    if cut is None:
        return Truncated(text, False)
    head, removed, unit = cut
    path = output_path(call_id)
    sandbox.write(path, text)
    hint = (
        f"The tool call succeeded but the output was truncated. Full output saved to: {path}\n"
        "Use the read tool with offset/limit to view specific sections, or grep to search it."
    )
    return Truncated(f"{head}\n\n...{removed} {unit} truncated...\n\n{hint}", True, path)
