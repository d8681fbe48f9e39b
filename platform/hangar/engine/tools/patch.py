"""OpenCode's patch format for apply_patch, parsed and applied as pure functions.

    *** Begin Patch
    *** Add File: path          (+lines follow)
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional)
    @@ context line             (seek to it, then apply the hunk below)
     kept line / -removed line / +added line
    *** End of File             (optional: the hunk anchors at the end of the file)
    *** End Patch

Hunks are located with progressively looser line comparison (exact, trailing whitespace, both
ends, Unicode punctuation folded to ASCII), like the Rust/TypeScript originals.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from hangar.engine.tools.budget import tick

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE, EOF_MARK = (
    "*** Add File:",
    "*** Delete File:",
    "*** Update File:",
    "*** Move to:",
    "*** End of File",
)


class PatchError(ValueError):
    pass


@dataclass
class Chunk:
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)
    context: str | None = None
    end_of_file: bool = False


@dataclass
class Hunk:
    type: Literal["add", "delete", "update"]
    path: str
    contents: str = ""
    move_path: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


def _strip_heredoc(text: str) -> str:
    match = re.match(r"^(?:cat\s+)?<<['\"]?(\w+)['\"]?\s*\n([\s\S]*?)\n\1\s*$", text)
    return match.group(2) if match else text


def parse_patch(text: str) -> list[Hunk]:
    lines = _strip_heredoc(text.replace("\r\n", "\n").strip()).split("\n")
    begin = next((i for i, line in enumerate(lines) if line.strip() == BEGIN), -1)
    end = next((i for i, line in enumerate(lines) if line.strip() == END), -1)
    if begin == -1 or end == -1 or begin >= end:
        raise PatchError("Invalid patch format: missing Begin/End markers")
    hunks: list[Hunk] = []
    i = begin + 1
    while i < end:
        line = lines[i]
        if line.startswith(ADD) and (path := line[len(ADD) :].strip()):
            i += 1
            body = []
            while i < end and not lines[i].startswith("***"):
                if lines[i].startswith("+"):
                    body.append(lines[i][1:])
                i += 1
            hunks.append(Hunk("add", path, contents="\n".join(body)))
        elif line.startswith(DELETE) and (path := line[len(DELETE) :].strip()):
            hunks.append(Hunk("delete", path))
            i += 1
        elif line.startswith(UPDATE) and (path := line[len(UPDATE) :].strip()):
            i += 1
            move = None
            if i < end and lines[i].startswith(MOVE):
                move = lines[i][len(MOVE) :].strip() or None
                i += 1
            chunks, i = _parse_chunks(lines, i, end)
            hunks.append(Hunk("update", path, move_path=move, chunks=chunks))
        else:
            i += 1
    return hunks


def _parse_chunks(lines: list[str], i: int, end: int) -> tuple[list[Chunk], int]:
    chunks: list[Chunk] = []
    while i < end and not lines[i].startswith("***"):
        if not lines[i].startswith("@@"):
            i += 1
            continue
        chunk = Chunk(context=lines[i][2:].strip() or None)
        i += 1
        while i < end and not lines[i].startswith("@@") and not lines[i].startswith("***"):
            line = lines[i]
            if line.startswith(" "):
                chunk.old_lines.append(line[1:])
                chunk.new_lines.append(line[1:])
            elif line.startswith("-"):
                chunk.old_lines.append(line[1:])
            elif line.startswith("+"):
                chunk.new_lines.append(line[1:])
            elif line == "":  # a blank context line whose leading space was lost
                chunk.old_lines.append("")
                chunk.new_lines.append("")
            i += 1
        if i < end and lines[i] == EOF_MARK:
            chunk.end_of_file = True
            i += 1
        chunks.append(chunk)
    return chunks, i


_PUNCT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u00a0": " ",
    }
)


def _fold(text: str) -> str:
    return text.strip().translate(_PUNCT).replace("\u2026", "...")


COMPARATORS: list[Callable[[str, str], bool]] = [
    lambda a, b: a == b,
    lambda a, b: a.rstrip() == b.rstrip(),
    lambda a, b: a.strip() == b.strip(),
    lambda a, b: _fold(a) == _fold(b),
]


def _try(
    lines: list[str], pattern: list[str], start: int, same: Callable[[str, str], bool], eof: bool
) -> int:
    size = len(pattern)
    if (
        eof
        and len(lines) - size >= start
        and all(same(lines[len(lines) - size + j], pattern[j]) for j in range(size))
    ):
        return len(lines) - size
    for i in range(start, len(lines) - size + 1):
        tick()  # O(lines x pattern) per comparator: the tool budget's deadline and abort
        if all(same(lines[i + j], pattern[j]) for j in range(size)):
            return i
    return -1


def seek(lines: list[str], pattern: list[str], start: int, eof: bool = False) -> int:
    if not pattern:
        return -1
    for same in COMPARATORS:
        found = _try(lines, pattern, start, same, eof)
        if found != -1:
            return found
    return -1


def apply_chunks(path: str, original: str, chunks: list[Chunk]) -> str:
    """New content of `path` after the update hunk's chunks; PatchError if a chunk does not fit."""
    lines = original.split("\n")
    trailing_newline = lines[-1] == ""
    if trailing_newline:
        lines.pop()
    replacements: list[tuple[int, int, list[str]]] = []
    index = 0
    for chunk in chunks:
        if chunk.context:
            found = seek(lines, [chunk.context], index)
            if found == -1:
                raise PatchError(f"Failed to find context '{chunk.context}' in {path}")
            index = found + 1
        if not chunk.old_lines:
            replacements.append((len(lines), 0, chunk.new_lines))
            continue
        old, new = chunk.old_lines, chunk.new_lines
        found = seek(lines, old, index, chunk.end_of_file)
        if found == -1 and old[-1] == "":
            old = old[:-1]
            new = new[:-1] if new and new[-1] == "" else new
            found = seek(lines, old, index, chunk.end_of_file)
        if found == -1:
            raise PatchError(f"Failed to find expected lines in {path}:\n" + "\n".join(chunk.old_lines))
        replacements.append((found, len(old), new))
        index = found + len(old)
    for start, length, new in sorted(replacements, key=lambda r: r[0], reverse=True):
        lines[start : start + length] = new
    if trailing_newline or not lines or lines[-1] != "":
        lines.append("")
    return "\n".join(lines)
