"""The in-memory index on disk, so that a restarted agent knows what the snapshot held.

Two files in the git dir: a base (every entry, with the tree it makes) and a log of records appended
after it, one per track that changed something, holding only what changed. Appending costs what
changed, not what is held (a rewrite costs every entry, on every track); the base is rewritten when the log

grows long. Each base has a random generation that its log records carry, so a log left over from
an older base is ignored, and a torn last record (a crash mid-write) ends the replay. A failed write
(the volume may be full) makes the next save a whole base: what is on disk is always a consistent,
possibly older, (tree, entries) pair.

  base   marshal((VERSION, generation, tree | None, [(path, mode, id, stat | None), ...]))
  log    records of 4-byte length + marshal((generation, tree | None, [(path, (mode, id, stat) | None), ...]))
"""

from __future__ import annotations

import marshal
import os

VERSION = 2
COMPACT_BYTES = 512 * 1024


class IndexFile:
    def __init__(self, git_dir: str) -> None:
        self.base = os.path.join(git_dir, "hangar-index")
        self.log = self.base + ".log"
        self.generation: bytes | None = None  # None: the next save writes a whole base
        self.log_bytes = 0

    def load(self) -> tuple[str | None, list[tuple]] | None:
        """(tree, entries) as last saved, or None if there is no usable base."""
        try:
            with open(self.base, "rb") as f:
                version, generation, tree, entries = marshal.load(f)
            if version != VERSION:
                return None
        except (OSError, ValueError, EOFError, TypeError):
            return None
        held = {path: (mode, oid, sig) for path, mode, oid, sig in entries}
        try:
            with open(self.log, "rb") as f:
                data = f.read()
        except OSError:
            data = b""
        pos = 0
        while pos + 4 <= len(data):
            size = int.from_bytes(data[pos : pos + 4], "big")
            try:
                record_generation, record_tree, changes = marshal.loads(data[pos + 4 : pos + 4 + size])
            except (ValueError, EOFError, TypeError):
                break  # torn by a crash: what came before it stands
            pos += 4 + size
            if record_generation != generation:
                break  # left over from an older base
            tree = record_tree
            for path, entry in changes:
                if entry is None:
                    held.pop(path, None)
                else:
                    held[path] = entry
        self.generation, self.log_bytes = generation, pos
        return tree, [(path, *entry) for path, entry in held.items()]

    def save(self, tree: str | None, changes, entries) -> None:
        """Record the index after a change: `changes` [(path, entry | None)] appended to the log, or,
        when the log is long (or a write failed), `entries()` as a new base."""
        if self.generation is not None and self.log_bytes < COMPACT_BYTES:
            record = marshal.dumps((self.generation, tree, list(changes)))
            try:
                with open(self.log, "ab") as f:
                    f.write(len(record).to_bytes(4, "big") + record)
                self.log_bytes += 4 + len(record)
                return
            except OSError:
                self.generation = None
        self._rewrite(tree, entries())

    def _rewrite(self, tree: str | None, entries: list[tuple]) -> None:
        generation = os.urandom(8)
        try:
            with open(self.base + ".tmp", "wb") as f:
                marshal.dump((VERSION, generation, tree, entries), f)
            os.replace(self.base + ".tmp", self.base)
            self.generation = generation
            with open(self.log, "wb"):
                self.log_bytes = 0  # truncated: its records belonged to the base just replaced
        except OSError:
            self.generation = None
