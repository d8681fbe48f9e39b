"""The edit tool's fuzzy matching: nine replacers tried in order (seed 000 §6.3).

Each replacer is a generator of candidate strings that occur verbatim in `content`. `replace`
walks the chain from strictest to most lenient and applies the first candidate that occurs
exactly once (or every occurrence with `replace_all`). Pure functions, no I/O, so each strategy
is unit-tested on the case only it catches. Line endings are the caller's business: the edit
tool normalises oldString/newString to the file's ending before calling `replace`.

Content and oldString come from a model, so the work is bounded: the anchor searches find each block's
closing line by bisecting a precomputed index (OpenCode rescans to the end of the file for each opening
anchor: quadratic when the closing anchor is absent), line similarity is exact only for lines up to
SIMILARITY_MAX_CHARS (longer ones compare equal-or-not), and every loop ticks the tool budget
(budget.tick: the deadline and the run's abort).
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable, Iterator

from hangar.engine.tools.budget import tick

Replacer = Callable[[str, str], Iterator[str]]

# OpenCode 1.18.33's texts, word for word: models are tuned on them (issue 30).
NOT_FOUND = (
    "Could not find oldString in the file. It must match exactly, including whitespace, indentation, "
    "and line endings."
)
MULTIPLE = "Found multiple matches for oldString. Provide more surrounding context to make the match unique."
IDENTICAL = "No changes to apply: oldString and newString are identical."

# BlockAnchor: one candidate block is accepted on its anchors alone; among several, the best
# middle-line similarity must reach 0.3.
SINGLE_CANDIDATE_THRESHOLD = 0.0
MULTIPLE_CANDIDATES_THRESHOLD = 0.3


SIMILARITY_MAX_CHARS = 1000  # per line: Levenshtein is len(a) * len(b)


class ReplaceError(ValueError):
    pass


def levenshtein(a: str, b: str) -> int:
    if not a or not b:
        return max(len(a), len(b))
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        tick()
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


class _Spans:
    """Character offsets of line blocks in "\n".join(lines), from one running sum (built on first use)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.starts: list[int] | None = None

    def __call__(self, start: int, end: int) -> tuple[int, int]:
        """Offsets of lines[start..end] (inclusive)."""
        starts = self.starts
        if starts is None:
            starts = self.starts = [0, *itertools.accumulate(len(line) + 1 for line in self.lines)]
        return starts[start], starts[end] + len(self.lines[end])


def _drop_trailing_empty(lines: list[str]) -> list[str]:
    return lines[:-1] if lines and lines[-1] == "" else lines


def simple(content: str, find: str) -> Iterator[str]:
    yield find


def line_trimmed(content: str, find: str) -> Iterator[str]:
    """Every line equal once both sides are stripped."""
    lines = content.split("\n")
    span, stripped = _Spans(lines), [line.strip() for line in lines]
    wanted = [line.strip() for line in _drop_trailing_empty(find.split("\n"))]
    for i in range(len(lines) - len(wanted) + 1):
        if not i & 255:
            tick()
        if stripped[i] == wanted[0] and all(stripped[i + j] == wanted[j] for j in range(len(wanted))):
            begin, stop = span(i, i + len(wanted) - 1)
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
        if longest > SIMILARITY_MAX_CHARS:
            score += (a == b) / to_check
        else:
            score += (1 - levenshtein(a, b) / longest) / to_check
        if early_exit and score >= SINGLE_CANDIDATE_THRESHOLD:
            break
    return score


def _anchors(content: str, find: str) -> tuple[list[str], list[str], list[tuple[int, int]]] | None:
    """For the anchor-based replacers: (search lines, content lines, blocks), or None when `find` has
    fewer than 3 lines (two anchors and at least one line between them). A block (i, j) pairs each line i
    equal (stripped) to the first search line with the first line j >= i + 2 equal to the last: one pass
    over the file and a bisect per opening anchor."""
    search = find.split("\n")
    if len(search) < 3:
        return None
    search = _drop_trailing_empty(search)
    lines = content.split("\n")
    first, last = search[0].strip(), search[-1].strip()
    openings, closings = [], []
    for index, line in enumerate(lines):
        if not index & 1023:
            tick()
        stripped = line.strip()
        if stripped == first:
            openings.append(index)
        if stripped == last:
            closings.append(index)
    blocks = []
    for i in openings:
        k = bisect.bisect_left(closings, i + 2)
        if k < len(closings):
            blocks.append((i, closings[k]))
    return search, lines, blocks


def block_anchor(content: str, find: str) -> Iterator[str]:
    """First and last lines (stripped) anchor a block of 3+ lines; the middle may differ."""
    if (anchored := _anchors(content, find)) is None:
        return
    search, lines, candidates = anchored
    if not candidates:
        return
    if len(candidates) == 1:
        start, end = candidates[0]
        if _middle_similarity(lines, start, end, search, early_exit=True) >= SINGLE_CANDIDATE_THRESHOLD:
            begin, stop = _Spans(lines)(start, end)
            yield content[begin:stop]
        return
    scored = [(_middle_similarity(lines, s, e, search, early_exit=False), (s, e)) for s, e in candidates]
    best_score, (start, end) = max(scored, key=lambda item: item[0])
    if best_score >= MULTIPLE_CANDIDATES_THRESHOLD:
        begin, stop = _Spans(lines)(start, end)
        yield content[begin:stop]


def _collapse(text: str) -> str:
    return " ".join(text.split())  # runs of whitespace as one space, ends stripped


def whitespace_normalized(content: str, find: str) -> Iterator[str]:
    """Runs of whitespace count as one space, within a line or across a block of lines."""
    wanted = _collapse(find)
    lines = content.split("\n")
    collapsed = []
    for index, line in enumerate(lines):
        if not index & 255:
            tick()
        normal = _collapse(line)
        collapsed.append(normal)
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
            if not i & 255:
                tick()
            if collapsed[i] and not wanted.startswith(collapsed[i]):
                continue
            # The block's collapsed text is its lines' collapsed texts, blank ones dropped, joined by " ".
            if " ".join(filter(None, collapsed[i : i + len(find_lines)])) == wanted:
                yield "\n".join(lines[i : i + len(find_lines)])


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
    wanted_stripped = [line.strip() for line in wanted.split("\n")]
    lines = content.split("\n")
    stripped = [line.strip() for line in lines]
    size = len(find.split("\n"))
    for i in range(len(lines) - size + 1):
        if not i & 255:
            tick()
        # Dedenting removes only leading whitespace: a match agrees line by line once stripped.
        if stripped[i] != wanted_stripped[0] or stripped[i : i + size] != wanted_stripped:
            continue
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
    if "\\" not in content:
        return  # without a backslash a block unescapes to itself: `wanted in content` said all
    lines = content.split("\n")
    size = len(wanted.split("\n"))
    escaped = [0, *itertools.accumulate("\\" in line for line in lines)]  # lines with one, so far
    for i in range(len(lines) - size + 1):
        if not i & 255:
            tick()
        if escaped[i + size] == escaped[i]:
            continue  # this block unescapes to itself: the same candidate as `wanted`
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
        if not i & 255:
            tick()
        head = lines[i].strip()
        if head and not trimmed.startswith(head):
            continue  # a stripped block starts with its first non-blank line
        block = "\n".join(lines[i : i + size])
        if block.strip() == trimmed:
            yield block


def context_aware(content: str, find: str) -> Iterator[str]:
    """Anchors on first/last line; accepts a same-sized block whose middle lines match >= 50%."""
    if (anchored := _anchors(content, find)) is None:
        return
    search, lines, blocks = anchored
    for i, j in blocks:
        tick()
        if j - i + 1 != len(search):
            continue
        total = matching = 0
        for k in range(1, len(search) - 1):
            a, b = lines[i + k].strip(), search[k].strip()
            if a or b:
                total += 1
                matching += a == b
        if total == 0 or matching / total >= 0.5:
            yield "\n".join(lines[i : j + 1])


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
        seen: set[str] = set()  # a candidate found ambiguous once is ambiguous again (each check is O(file))
        for candidate in replacer(content, old):
            tick()
            if not candidate or candidate in seen:
                continue
            seen.add(candidate)
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
