"""The edit tool's fuzzy matching: nine replacers tried in order (seed 000 §6.3).

Each replacer is a generator of candidate strings that occur verbatim in `content`. `replace`
walks the chain from strictest to most lenient and applies the first candidate that occurs
exactly once (or every occurrence with `replace_all`). Pure functions, no I/O, so each strategy
is unit-tested on the case only it catches. Line endings are the caller's business: the edit
tool normalises oldString/newString to the file's ending before calling `replace`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

Replacer = Callable[[str, str], Iterator[str]]

NOT_FOUND = "oldString not found in content"
MULTIPLE = (
    "Found multiple matches for oldString. Provide more surrounding lines in oldString to "
    "identify the correct match."
)
IDENTICAL = "oldString and newString must be different"

# BlockAnchor: one candidate block is accepted on its anchors alone; among several, the best
# middle-line similarity must reach 0.3.
SINGLE_CANDIDATE_THRESHOLD = 0.0
MULTIPLE_CANDIDATES_THRESHOLD = 0.3


class ReplaceError(ValueError):
    pass


def levenshtein(a: str, b: str) -> int:
    if not a or not b:
        return max(len(a), len(b))
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _span(lines: list[str], start: int, end: int) -> tuple[int, int]:
    """Character offsets of lines[start..end] (inclusive) in "\n".join(lines)."""
    begin = sum(len(line) + 1 for line in lines[:start])
    stop = begin + sum(len(line) for line in lines[start : end + 1]) + (end - start)
    return begin, stop


def _drop_trailing_empty(lines: list[str]) -> list[str]:
    return lines[:-1] if lines and lines[-1] == "" else lines


def simple(content: str, find: str) -> Iterator[str]:
    yield find


def line_trimmed(content: str, find: str) -> Iterator[str]:
    """Every line equal once both sides are stripped."""
    lines = content.split("\n")
    wanted = [line.strip() for line in _drop_trailing_empty(find.split("\n"))]
    for i in range(len(lines) - len(wanted) + 1):
        if all(lines[i + j].strip() == wanted[j] for j in range(len(wanted))):
            begin, stop = _span(lines, i, i + len(wanted) - 1)
            yield content[begin:stop]


def _middle_similarity(lines: list[str], start: int, end: int, search: list[str], early_exit: bool) -> float:
    block_size = end - start + 1
    to_check = min(len(search) - 2, block_size - 2)
    if to_check <= 0:
        return 1.0
    score = 0.0
    for j in range(1, min(len(search) - 1, block_size - 1)):
        a, b = lines[start + j].strip(), search[j].strip()
        longest = max(len(a), len(b))
        if longest == 0:
            continue
        score += (1 - levenshtein(a, b) / longest) / to_check
        if early_exit and score >= SINGLE_CANDIDATE_THRESHOLD:
            break
    return score


def _anchors(content: str, find: str) -> tuple[list[str], list[str], str, str] | None:
    """For the anchor-based replacers: (search lines, content lines, first, last stripped), or None when
    `find` has fewer than 3 lines (two anchors and at least one line between them)."""
    search = find.split("\n")
    if len(search) < 3:
        return None
    search = _drop_trailing_empty(search)
    return search, content.split("\n"), search[0].strip(), search[-1].strip()


def block_anchor(content: str, find: str) -> Iterator[str]:
    """First and last lines (stripped) anchor a block of 3+ lines; the middle may differ."""
    if (anchored := _anchors(content, find)) is None:
        return
    search, lines, first, last = anchored
    candidates = []
    for i, line in enumerate(lines):
        if line.strip() != first:
            continue
        for j in range(i + 2, len(lines)):
            if lines[j].strip() == last:
                candidates.append((i, j))
                break
    if not candidates:
        return
    if len(candidates) == 1:
        start, end = candidates[0]
        if _middle_similarity(lines, start, end, search, early_exit=True) >= SINGLE_CANDIDATE_THRESHOLD:
            begin, stop = _span(lines, start, end)
            yield content[begin:stop]
        return
    scored = [(_middle_similarity(lines, s, e, search, early_exit=False), (s, e)) for s, e in candidates]
    best_score, (start, end) = max(scored, key=lambda item: item[0])
    if best_score >= MULTIPLE_CANDIDATES_THRESHOLD:
        begin, stop = _span(lines, start, end)
        yield content[begin:stop]


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def whitespace_normalized(content: str, find: str) -> Iterator[str]:
    """Runs of whitespace count as one space, within a line or across a block of lines."""
    wanted = _collapse(find)
    lines = content.split("\n")
    for line in lines:
        normal = _collapse(line)
        if normal == wanted:
            yield line
        elif wanted and wanted in normal:
            words = find.strip().split()
            if words:
                match = re.search(r"\s+".join(re.escape(w) for w in words), line)
                if match:
                    yield match.group(0)
    find_lines = find.split("\n")
    if len(find_lines) > 1:
        for i in range(len(lines) - len(find_lines) + 1):
            block = "\n".join(lines[i : i + len(find_lines)])
            if _collapse(block) == wanted:
                yield block


def _dedent(text: str) -> str:
    lines = text.split("\n")
    filled = [line for line in lines if line.strip()]
    if not filled:
        return text
    indent = min(len(line) - len(line.lstrip()) for line in filled)
    return "\n".join(line if not line.strip() else line[indent:] for line in lines)


def indentation_flexible(content: str, find: str) -> Iterator[str]:
    """The same block at a different indentation level (common indent removed on both sides)."""
    wanted = _dedent(find)
    lines = content.split("\n")
    size = len(find.split("\n"))
    for i in range(len(lines) - size + 1):
        block = "\n".join(lines[i : i + size])
        if _dedent(block) == wanted:
            yield block


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "\n": "\n", "$": "$"}


def _unescape(text: str) -> str:
    return re.sub(r"\\(n|t|r|'|\"|`|\\|\n|\$)", lambda m: _ESCAPES[m.group(1)], text)


def escape_normalized(content: str, find: str) -> Iterator[str]:
    """The model wrote escape sequences (\\n, \\", ...) where the file has the characters."""
    wanted = _unescape(find)
    if wanted in content:
        yield wanted
    lines = content.split("\n")
    size = len(wanted.split("\n"))
    for i in range(len(lines) - size + 1):
        block = "\n".join(lines[i : i + size])
        if _unescape(block) == wanted:
            yield block


def trimmed_boundary(content: str, find: str) -> Iterator[str]:
    """oldString carried leading/trailing blank lines or spaces the file does not have there."""
    trimmed = find.strip()
    if trimmed == find:
        return
    if trimmed in content:
        yield trimmed
    lines = content.split("\n")
    size = len(find.split("\n"))
    for i in range(len(lines) - size + 1):
        block = "\n".join(lines[i : i + size])
        if block.strip() == trimmed:
            yield block


def context_aware(content: str, find: str) -> Iterator[str]:
    """Anchors on first/last line; accepts a same-sized block whose middle lines match >= 50%."""
    if (anchored := _anchors(content, find)) is None:
        return
    search, lines, first, last = anchored
    for i, line in enumerate(lines):
        if line.strip() != first:
            continue
        for j in range(i + 2, len(lines)):
            if lines[j].strip() != last:
                continue
            block = lines[i : j + 1]
            if len(block) == len(search):
                total = matching = 0
                for k in range(1, len(block) - 1):
                    a, b = block[k].strip(), search[k].strip()
                    if a or b:
                        total += 1
                        matching += a == b
                if total == 0 or matching / total >= 0.5:
                    yield "\n".join(block)
                    break
            break


def multi_occurrence(content: str, find: str) -> Iterator[str]:
    """Every exact occurrence; only useful with replace_all (the uniqueness check rejects it otherwise)."""
    start = 0
    while find:
        index = content.find(find, start)
        if index == -1:
            return
        yield find
        start = index + len(find)


REPLACERS: list[tuple[str, Replacer]] = [
    ("SimpleReplacer", simple),
    ("LineTrimmedReplacer", line_trimmed),
    ("BlockAnchorReplacer", block_anchor),
    ("WhitespaceNormalizedReplacer", whitespace_normalized),
    ("IndentationFlexibleReplacer", indentation_flexible),
    ("EscapeNormalizedReplacer", escape_normalized),
    ("TrimmedBoundaryReplacer", trimmed_boundary),
    ("ContextAwareReplacer", context_aware),
    ("MultiOccurrenceReplacer", multi_occurrence),
]


def replace_with(content: str, old: str, new: str, replace_all: bool = False) -> tuple[str, str]:
    """Apply the chain; returns (new content, name of the replacer that matched)."""
    if old == new:
        raise ReplaceError(IDENTICAL)
    found = False
    for name, replacer in REPLACERS:
        for candidate in replacer(content, old):
            if not candidate:
                continue
            index = content.find(candidate)
            if index == -1:
                continue
            found = True
            if replace_all:
                return content.replace(candidate, new), name
            if content.rfind(candidate) != index:
                continue  # ambiguous: try the next candidate, then the next strategy
            return content[:index] + new + content[index + len(candidate) :], name
    raise ReplaceError(MULTIPLE if found else NOT_FOUND)


def replace(content: str, old: str, new: str, replace_all: bool = False) -> str:
    return replace_with(content, old, new, replace_all)[0]
