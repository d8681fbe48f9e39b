"""Secret values masked out of everything a run stores or sends: tool output, titles, metadata and errors,
setup logs and the events that stream them. The model never sees a secret, and neither does a viewer.

A value is masked as it is and in the encodings a command is likely to print it in: each of its lines,
base64 (standard and URL-safe, at each of the three byte alignments it may take inside a longer encoded
text, so `echo $S | base64` and a token inside a base64'd JSON blob are both caught), hex, and
percent-encoding. Pure: no Django, no I/O (tests feed it values directly)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "***"
MIN_CHARS = 6  # a needle shorter than this would mask ordinary text (hangar.projects.validation agrees)


def _base64_cores(data: bytes) -> set[str]:
    """The part of data's base64 text that does not depend on the bytes around it, at each alignment."""
    cores = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode()
        total = shift + len(data)
        start = -(-shift * 8 // 6)  # characters that carry bits of the padding bytes before
        end = (total - total % 3) // 3 * 4  # characters of complete groups only
        core = encoded[start:end]
        if len(core) >= MIN_CHARS:
            cores.add(core)
            cores.add(core.replace("+", "-").replace("/", "_"))
    return cores


def needles(value: str) -> set[str]:
    """What to look for in output for one secret value."""
    found: set[str] = set()
    for text in {value, value.strip(), *value.splitlines()}:
        if len(text) < MIN_CHARS:
            continue
        raw = text.encode()
        found.update({text, quote(text, safe=""), binascii.hexlify(raw).decode()})
        found.add(binascii.hexlify(raw).decode().upper())
        found.update(_base64_cores(raw))
    return {n for n in found if len(n) >= MIN_CHARS}


class Masker:
    """Replaces every occurrence of any secret (and its encodings) with MASK."""

    def __init__(self, values: Iterable[str]):
        found: set[str] = set()
        for value in values:
            found |= needles(value)
        self.longest = max((len(n) for n in found), default=0)
        ordered = sorted(found, key=len, reverse=True)  # the longest wins where two overlap
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, value: str) -> str:
        return self._pattern.sub(MASK, value) if self._pattern is not None and value else value

    def data(self, value: Any) -> Any:
        """`value` with every string in it masked (dicts, lists, keys included)."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(v) for v in value]
        return value

    def stream(self) -> StreamMasker:
        return StreamMasker(self)


NO_MASKER = Masker(())


class StreamMasker:
    """Masks text that arrives in chunks: a secret split across two chunks is still caught, because the
    last `longest - 1` characters are held back until the next chunk (or `flush`)."""

    def __init__(self, masker: Masker):
        self.masker = masker
        self.hold = max(masker.longest - 1, 0)
        self.buffer = ""

    def feed(self, chunk: str) -> str:
        pattern = self.masker._pattern
        if pattern is None:
            return chunk
        text = self.buffer + chunk
        cut = len(text) - self.hold
        if cut <= 0:
            self.buffer = text
            return ""
        out, pos = [], 0
        for found in pattern.finditer(text):
            if found.start() >= cut:
                break
            out.append(text[pos : found.start()])
            out.append(MASK)
            pos = found.end()
        cut = max(cut, pos)
        out.append(text[pos:cut])
        self.buffer = text[cut:]
        return "".join(out)

    def flush(self) -> str:
        text, self.buffer = self.buffer, ""
        return self.masker.text(text)
