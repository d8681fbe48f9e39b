"""Bound what a tool returns to the model (seed 000 §6.1, seed 001): over 2000 lines or 50 KB, the model
gets the first and last lines that fit (bash: the last ones) plus a note, and the full text is saved in
the sandbox for `read`.

Where the full text goes: `/tmp/hangar/tool-output/<call id>.txt` inside the session's container.
Outside /workspace on purpose: it never shows up in the project's git status, in shadow-git
snapshots, or in list/glob/grep results; `read` takes absolute paths, so the model can page
through it with offset/limit. /tmp is the container's tmpfs, so the file lives as long as the
container (a recreated sandbox starts without old outputs, which is fine: they are scratch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from sandbox.protocol import TOOL_OUTPUT_DIR, Sandbox

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
OUTPUT_DIR = TOOL_OUTPUT_DIR
Direction = Literal["both", "head", "tail"]


@dataclass(frozen=True)
class Truncated:
    content: str
    truncated: bool
    output_path: str | None = None


def output_path(call_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", call_id)[:120] or "call"
    return f"{OUTPUT_DIR}/{safe}.txt"


def _fit(lines: list[str], max_lines: int, max_bytes: int) -> tuple[list[str], int, bool]:
    """The leading lines of `lines` within both limits: (kept, their bytes, whether bytes ran out)."""
    kept: list[str] = []
    size = 0
    for line in lines[:max_lines]:
        line_size = len(line.encode("utf-8")) + (1 if kept else 0)
        if size + line_size > max_bytes:
            return kept, size, True
        kept.append(line)
        size += line_size
    return kept, size, False


def preview(
    text: str,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
    *,
    direction: Direction = "both",
    total: tuple[int, int] | None = None,
) -> tuple[str, str, int, str] | None:
    """None when `text` fits; else (head kept, tail kept, amount removed, unit "lines" or "bytes").

    `direction`: "both" keeps the beginning and the end (seed 001, generic bounding), "tail" only the
    end (bash: the last lines are where a command says what went wrong), "head" only the beginning.
    `total` = (bytes, lines) of the complete output when `text` is already a cut of it (the sandbox
    drops the middle of a huge command output): what was removed is counted against the whole."""
    lines = text.split("\n")
    size, count = total or (len(text.encode("utf-8")), len(lines))
    if count <= max_lines and size <= max_bytes:
        return None
    if direction == "head":
        head, kept_bytes, hit_bytes = _fit(lines, max_lines, max_bytes)
        tail: list[str] = []
    elif direction == "tail":
        reversed_tail, kept_bytes, hit_bytes = _fit(lines[::-1], max_lines, max_bytes)
        head, tail = [], reversed_tail[::-1]
    else:
        head, head_bytes, head_hit = _fit(lines, max_lines // 2, max_bytes // 2)
        rest = lines[len(head) :]
        reversed_tail, tail_bytes, tail_hit = _fit(rest[::-1], max_lines - len(head), max_bytes - head_bytes)
        tail = reversed_tail[::-1]
        kept_bytes, hit_bytes = head_bytes + tail_bytes, head_hit or tail_hit
    if hit_bytes:
        return "\n".join(head), "\n".join(tail), max(size - kept_bytes, 0), "bytes"
    return "\n".join(head), "\n".join(tail), max(count - len(head) - len(tail), 0), "lines"


def truncate_output(
    text: str,
    *,
    call_id: str,
    sandbox: Sandbox,
    max_lines: int = MAX_LINES,
    max_bytes: int = MAX_BYTES,
    direction: Direction = "both",
    total: tuple[int, int] | None = None,
    saved_path: str | None = None,
) -> Truncated:
    """Bound `text`; over the limits, save the complete text for `read` and say where. `saved_path`:
    the complete text is already kept there (the sandbox spilled a command's whole output), so it
    is not written again, and `total` counts it."""
    cut = preview(text, max_lines, max_bytes, direction=direction, total=total)
    if cut is None:
        return Truncated(text, False)
    head, tail, removed, unit = cut
    path = saved_path or output_path(call_id)
    if saved_path is None:
        sandbox.write(path, text)
    hint = (
        f"The tool call succeeded but the output was truncated. Full output saved to: {path}\n"
        "Use the read tool with offset/limit to view specific sections, or grep to search it."
    )
    marker = f"...{removed} {unit} truncated..."
    content = "\n\n".join(piece for piece in (head, marker, tail) if piece)
    return Truncated(f"{content}\n\n{hint}", True, path)
