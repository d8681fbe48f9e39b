"""The workspace as a snapshot sees it, kept up to date by stat alone: git's index, in memory.

What a snapshot holds (the rules `git ls-files -m -d -o --exclude-standard` + `git add --all` gave
before, with git's own index as the record of what is held):
  * every regular file and symlink that is held already, or is new and not ignored (.gitignore,
    info/exclude, core.excludesFile), outside nested repositories and `.git`;
  * at most 2 MB a file: a bigger new file is left out, a held file that grows keeps its last version;
  * blobs and modes as `git add` stores them (a .gitattributes in play routes blobs through git).

A scan stats what it holds and lists only directories whose own stat changed (an entry added,
removed or renamed changes its directory's mtime/ctime), so an unchanged workspace costs one lstat a
file and one fstat a directory, and the few files that changed are read. A stat is trusted only when
its ctime is strictly older than a clock file touched as the scan starts (git's "racily clean" rule,
with the filesystem's own clock and granularity): a file written again within the same timestamp
tick would otherwise look unchanged. Trees are rebuilt only along the paths that changed, as loose
objects that git reads like its own.
"""

from __future__ import annotations

import os
import stat
import sys

import gitrules
from heldtree import FULL, NESTED, TRACKED, Dir, retrack, walk_files, walked
from objects import TREE_MODE, tree_body

MAX_FILE_BYTES = 2 * 1024 * 1024
LINK_MODE = 0o120000
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# A scan recurses once per directory level, and git handles trees a few thousand levels deep (paths
# up to PATH_MAX): so must we. Python-to-Python calls use no C stack in 3.11.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))


def _sig(st: os.stat_result) -> tuple:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


class Worktree:
    def __init__(self, root: str, store, hasher, clock_file: str) -> None:
        self.root = os.fsencode(root)
        self.clock_file = clock_file  # on the workspace's filesystem: see scan()
        self.store = store
        self.hasher = hasher  # blobs through git when attributes apply (objects.GitHasher)
        self.top = Dir()
        self.global_lists: list[list] = []  # info/exclude, core.excludesFile (highest precedence first)
        self.global_attrs = False
        self.changes: dict[bytes, tuple] = {}  # path -> ((mode, id) before | None, after | None)
        self.trusted_before = 0

    # --- scanning -------------------------------------------------------------------------------

    def scan(self, force: bool = False) -> dict[bytes, tuple]:
        """Bring the index up to date with the workspace; returns what changed (see `changes`).
        `force` lists every directory again (ignore rules outside the workspace changed)."""
        self.changes = {}
        # The filesystem's own "now", as git uses its index file's mtime: a stat is trusted only if its
        # ctime is strictly older, so a file written again within the same timestamp tick (4 ms of
        # kernel clock, or a whole second on filesystems that keep seconds) is read again next time.
        try:
            os.utime(self.clock_file)
        except FileNotFoundError:
            open(self.clock_file, "ab").close()
        self.trusted_before = os.stat(self.clock_file).st_ctime_ns
        fd = os.open(self.root, DIR_FLAGS)
        try:
            self._scan(self.top, b"", fd, [], force, self.global_attrs)
        finally:
            os.close(fd)
        return self.changes

    def _note(self, path: bytes, old: tuple | None, new: tuple | None) -> None:
        first = self.changes.get(path)
        self.changes[path] = (first[0] if first else old, new)

    def _trusted(self, st: os.stat_result) -> tuple | None:
        return _sig(st) if st.st_ctime_ns < self.trusted_before else None

    def _scan(self, node: Dir, prefix: bytes, fd: int, lists: list, force: bool, attrs: bool) -> bool:
        """Scan one directory (open as `fd`); True if anything it holds changed."""
        changed = False
        if node.mode == FULL:
            relisted = self._relist(node, prefix, fd, lists, force)
            if relisted is None:
                return False
            changed, lists, force = relisted
        if node.attrs_sig is not None or node.mode == TRACKED:
            attrs = self._check_attrs(node, fd) or attrs
        lstat = os.lstat
        for name, held in list(node.files.items()):  # the hot loop: one lstat per held file
            try:
                st = lstat(name, dir_fd=fd)
            except OSError:
                st = None
            sig = held[2]
            if (
                st is not None
                and sig is not None
                and st.st_ctime_ns == sig[3]
                and st.st_mtime_ns == sig[2]
                and st.st_ino == sig[0]
                and st.st_size == sig[1]
                and st.st_mode == sig[4]
            ):
                continue
            changed = self._check_file(node, prefix, fd, name, attrs) or changed
        for name in list(node.others):
            changed = self._check_file(node, prefix, fd, name, attrs) or changed
        changed = self._scan_dirs(node, prefix, fd, lists, force, attrs) or changed
        if changed:
            node.tree = None
        return changed

    def _relist(self, node: Dir, prefix: bytes, fd: int, lists: list, force: bool) -> tuple | None:
        """A FULL directory: list its entries again if it changed (or its ignore rules did). Returns
        (changed, the rule lists for below it, force), or None if it became a repository of its own."""
        st = os.fstat(fd)
        relist = force or node.sig is None or node.sig != _sig(st)
        if relist and prefix and not node.holds() and gitrules.is_nested_repo(self.root + b"/" + prefix[:-1]):
            # A `.git` appeared in it (creating one changes this directory, not its parent): like
            # git, which decides on every walk, leave out a repository of its own that holds nothing.
            node.mode, node.dirs, node.others, node.sig, node.tree = NESTED, {}, set(), None, b""
            node.decided = {}
            return None
        if self._read_ignore(node, prefix, fd, relist):
            force = relist = True  # its rules changed: every decision below it is re-made
        if node.patterns:
            lists = [node.patterns, *lists]
        changed = False
        if relist:
            changed = self._list(node, prefix, fd, lists + self.global_lists, force)
            node.sig = self._trusted(st)
        return changed, lists, force

    def _scan_dirs(self, node: Dir, prefix: bytes, fd: int, lists: list, force: bool, attrs: bool) -> bool:
        """Scan each directory `node` walks; True if anything below changed."""
        changed = False
        for name, child in list(node.dirs.items()):
            if child.mode == NESTED:
                if gitrules.is_nested_repo(self.root + b"/" + prefix + name):
                    continue
                walked(child)  # no longer a repository of its own
            try:
                child_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
            except PermissionError:
                continue  # cannot look inside now: keep what it holds
            except OSError:  # gone, or no longer a directory
                changed = self._forget(node.dirs.pop(name), prefix + name + b"/") or changed
                continue
            try:
                changed = self._scan(child, prefix + name + b"/", child_fd, lists, force, attrs) or changed
            finally:
                os.close(child_fd)
            if child.mode == TRACKED and not child.holds():
                del node.dirs[name]
        return changed

    def _read_ignore(self, node: Dir, prefix: bytes, fd: int, relisting: bool) -> bool:
        """Re-read the directory's .gitignore if it may have changed; True if its content did."""
        if not relisting and node.ignore_raw is None:
            return False  # it had none, and its entries did not change
        try:
            st = os.lstat(b".gitignore", dir_fd=fd)
        except OSError:
            st = None
        if st is not None and node.ignore_sig is not None and _sig(st) == node.ignore_sig:
            return False
        raw = None
        if st is not None and stat.S_ISREG(st.st_mode):  # git does not follow a symlinked .gitignore
            raw = _read(b".gitignore", fd)
        node.ignore_sig = self._trusted(st) if st is not None and raw is not None else None
        if raw == node.ignore_raw:
            return False
        node.ignore_raw = raw
        node.patterns = gitrules.parse(raw, prefix) if raw else []
        return True

    def _check_attrs(self, node: Dir, fd: int) -> bool:
        """Whether the directory has a .gitattributes; a changed one restarts the git hasher (git
        reads attributes once per process)."""
        try:
            st = os.lstat(b".gitattributes", dir_fd=fd)
            sig = _sig(st) if stat.S_ISREG(st.st_mode) else None
        except OSError:
            sig = None
        if sig != node.attrs_sig:
            self.hasher.close()
            node.attrs_sig = sig
        return sig is not None

    def _list(self, node: Dir, prefix: bytes, fd: int, lists: list, force: bool) -> bool:
        """Read a FULL directory's entries again: which files are candidates, which directories to walk."""
        dirs, others, changed, attrs = {}, set(), False, False
        known, decided = ({} if force else node.decided), {}

        def ignored(path: bytes, name: bytes, is_dir: bool) -> bool:
            verdict = known.get((name, is_dir))
            if verdict is None:
                verdict = gitrules.excluded(lists, path, name, is_dir)
            decided[name, is_dir] = verdict
            return verdict

        with _entries(fd) as entries:
            for entry in entries:
                name = entry.name if isinstance(entry.name, bytes) else os.fsencode(entry.name)
                if name == b".git":
                    continue
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                if not (is_link or is_dir or entry.is_file(follow_symlinks=False)):
                    continue  # fifo, socket, device: git leaves them out
                if name == b".gitattributes" and not is_dir and not is_link:
                    attrs = True
                if not gitrules.indexable(name, is_link):
                    continue
                path = prefix + name
                if is_dir:
                    child = self._listed_dir(node.dirs.get(name), path, ignored(path, name, True))
                    if child is not None:
                        dirs[name] = child
                elif name not in node.files and not ignored(path, name, False):
                    others.add(name)
        for name, child in node.dirs.items():
            if name not in dirs:
                changed = self._forget(child, prefix + name + b"/") or changed
        node.dirs, node.others, node.decided = dirs, others, decided
        if attrs and node.attrs_sig is None:
            node.attrs_sig = ()  # checked (and the hasher restarted) right after listing
        elif not attrs and node.attrs_sig is not None:
            self.hasher.close()
            node.attrs_sig = None
        return changed

    def _listed_dir(self, child: Dir | None, path: bytes, ignored: bool) -> Dir | None:
        """What a directory entry becomes once listed (`child`: what it was): walked, a repository of its
        own, kept for what it holds though ignored, or left out (None)."""
        if child is not None and child.holds():
            if ignored:  # git still updates what it holds there, and adds nothing new
                retrack(child)
                return child
            return walked(child)  # held content keeps it walked, even as a repository of its own
        if ignored:
            return None
        if gitrules.is_nested_repo(self.root + b"/" + path):
            return Dir(NESTED)
        return walked(child or Dir())

    def _check_file(self, node: Dir, prefix: bytes, fd: int, name: bytes, attrs: bool) -> bool:
        held = node.files.get(name)
        try:
            st = os.lstat(name, dir_fd=fd)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        except OSError:
            return False  # cannot see it now: keep it as it is
        if st is not None and held is not None and held[2] == _sig(st):
            return False  # the common case: untouched since it was read
        if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            node.others.discard(name)
            if held is None:
                return False
            del node.files[name]
            self._note(prefix + name, held[:2], None)
            return True
        kind = st.st_mode
        is_link = stat.S_ISLNK(kind)
        mode = LINK_MODE if is_link else (0o100755 if kind & 0o100 else 0o100644)
        blob = self._blob(prefix + name, name, fd, is_link, attrs) if st.st_size <= MAX_FILE_BYTES else None
        if blob is None:  # too big or unreadable: a new file waits, a held one keeps its version
            if held is None:
                node.others.add(name)
            else:
                node.files[name] = (held[0], held[1], None)
            return False
        node.others.discard(name)
        node.files[name] = (mode, blob, self._trusted(st))
        if held is not None and held[:2] == (mode, blob):
            return False
        self._note(prefix + name, held[:2] if held else None, (mode, blob))
        return True

    def _blob(self, path: bytes, name: bytes, fd: int, is_link: bool, attrs: bool) -> bytes | None:
        try:
            data = os.readlink(name, dir_fd=fd) if is_link else _read(name, fd)
        except OSError:
            return None
        if data is None:
            return None
        if attrs and not is_link:  # eol/ident/filter conversions: let git store it as `git add` would
            return self.hasher.hash(path)
        return self.store.write(b"blob", data)

    def _forget(self, child: Dir, prefix: bytes) -> bool:
        """A subdirectory (at `prefix`) is gone: everything it held is deleted."""
        changed = False
        for path, entry in walk_files(child, prefix):
            self._note(path, entry[:2], None)
            changed = True
        return changed

    # --- trees ----------------------------------------------------------------------------------

    def build(self) -> str:
        """The workspace's tree id (hex), writing the trees of directories that changed."""
        oid = self._tree(self.top)
        return (oid or self.store.write(b"tree", b"")).hex()

    def _tree(self, node: Dir) -> bytes | None:
        if node.tree is None:
            entries = [(name, mode, blob) for name, (mode, blob, _) in node.files.items()]
            for name, child in node.dirs.items():
                oid = self._tree(child)
                if oid:
                    entries.append((name, TREE_MODE, oid))
            node.tree = self.store.write(b"tree", tree_body(entries)) if entries else b""
        return node.tree or None

    # --- what it holds, as a list (saving, loading, restore, revert) ------------------------------

    def entries(self) -> list[tuple]:
        return [(path, *entry) for path, entry in walk_files(self.top, b"")]

    def get(self, path: bytes) -> tuple | None:
        """The entry (mode, id, stat) held at `path`, or None."""
        *parents, name = path.split(b"/")
        node = self.top
        for part in parents:
            child = node.dirs.get(part)
            if child is None:
                return None
            node = child
        return node.files.get(name)

    def reset(self, entries) -> None:
        """Hold exactly `entries` [(path, mode, id, stat or None)]; every directory is listed again."""
        self.top = Dir()
        for path, mode, blob, sig in entries:
            self._put(path, (mode, blob, sig))
        self.changes = {}

    def put(self, path: bytes, mode: int, blob: bytes) -> None:
        """Hold (mode, blob) at `path` (git wrote that file: revert), noted as a change."""
        old = self._put(path, (mode, blob, None))
        if old != (mode, blob):
            self._note(path, old, (mode, blob))

    def _put(self, path: bytes, entry: tuple) -> tuple | None:
        node, prefix = self.top, b""
        *parents, name = path.split(b"/")
        for part in parents:
            node.tree = node.sig = None
            if part in node.files:  # a file where a directory is now
                self._note(prefix + part, node.files.pop(part)[:2], None)
            child = node.dirs.get(part)
            if child is None or child.mode == NESTED:
                child = node.dirs[part] = Dir()
            node, prefix = child, prefix + part + b"/"
        node.tree = node.sig = None
        if name in node.dirs:  # a directory where a file is now
            self._forget(node.dirs.pop(name), prefix + name + b"/")
        old = node.files.get(name)
        node.files[name] = entry
        return old[:2] if old else None


def _entries(fd: int):
    """The entries of directory `fd`. Through /proc (the very directory `fd` is) names come as bytes,
    which spares decoding each name and encoding it back."""
    try:
        return os.scandir(b"/proc/self/fd/%d" % fd)
    except OSError:
        return os.scandir(fd)


def _read(name: bytes, fd: int) -> bytes | None:
    """A regular file's content (None if it is not one any more: never block on a fifo)."""
    file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    try:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(file_fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(file_fd)
