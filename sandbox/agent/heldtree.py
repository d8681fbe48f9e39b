"""What a snapshot holds, as a tree of directories kept in memory (worktree.Worktree fills it by scanning).

Each directory node keeps the files it holds with their blob ids and trusted stats, the subdirectories
walked below it, its cached tree id, and what its last listing decided; `mode` says how it is walked.
These helpers touch nodes only, never the filesystem.
"""

from __future__ import annotations

FULL, TRACKED, NESTED = 0, 1, 2  # listed with ignore rules / only what it holds / a repository of its own


class Dir:
    __slots__ = (
        "attrs_sig",
        "decided",
        "dirs",
        "files",
        "ignore_raw",
        "ignore_sig",
        "mode",
        "others",
        "patterns",
        "sig",
        "tree",
    )

    def __init__(self, mode: int = FULL) -> None:
        self.files: dict[bytes, tuple] = {}  # name -> (mode, blob id, trusted stat or None): what it holds
        self.dirs: dict[bytes, Dir] = {}  # subdirectories that are walked (or hold something)
        self.others: set[bytes] = (
            set()
        )  # untracked, not ignored, not stored (too big, unreadable): re-checked
        self.tree: bytes | None = None  # tree id while nothing below changed; b"" = holds nothing
        self.sig: tuple | None = None  # its stat when last listed; None = list it again
        self.mode = mode
        self.patterns: list = []  # its .gitignore
        self.ignore_sig: tuple | None = None
        self.ignore_raw: bytes | None = None
        self.attrs_sig: tuple | None = None  # its .gitattributes' stat, None = it has none
        # (name, is a directory) -> ignored, as last listed: valid until the rules change, which lists
        # the directory again with `force`; so a listing matches only names it has not seen
        self.decided: dict[tuple, bool] = {}

    def holds(self) -> bool:
        todo = [self]
        while todo:
            node = todo.pop()
            if node.files:
                return True
            todo.extend(node.dirs.values())
        return False


def walked(child: Dir) -> Dir:
    """`child`, to be listed with ignore rules from now on (it was only kept for what it holds)."""
    if child.mode != FULL:
        child.mode, child.sig = FULL, None
    return child


def retrack(node: Dir) -> None:
    """An ignored directory: keep only what it holds, and stop listing it."""
    node.mode, node.sig, node.others, node.decided = TRACKED, None, set(), {}
    node.patterns, node.ignore_raw, node.ignore_sig = [], None, None
    for name, child in list(node.dirs.items()):
        if child.holds():
            retrack(child)
        else:
            del node.dirs[name]


def walk_files(node: Dir, prefix: bytes):
    """(path, entry) of every file held at or below `node`, its paths starting with `prefix`."""
    todo = [(node, prefix)]
    while todo:
        node, prefix = todo.pop()
        for name, entry in node.files.items():
            yield prefix + name, entry
        todo.extend((child, prefix + name + b"/") for name, child in node.dirs.items())
