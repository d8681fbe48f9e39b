"""Writing git objects without git: loose blobs and trees, byte for byte what git writes.

A loose object is zlib("<type> <size>\\0" + body) at objects/<first 2 hex>/<other 38>, named by the
SHA-1 of the uncompressed bytes; git reads it like one it wrote. Like git (core.looseCompression
defaults to 1) we compress fast, and like git we "freshen" an object that already exists (touch its
file) so that `gc --prune=<age>` measures its age from its last use, not its first.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import zlib

TREE_MODE = 0o40000


def tree_body(entries: list[tuple[bytes, int, bytes]]) -> bytes:
    """A tree's body from (name, mode, 20-byte id); git orders names as if directories ended in '/'."""
    entries = sorted(entries, key=lambda e: e[0] + b"/" if e[1] == TREE_MODE else e[0])
    return b"".join(b"%o %s\0%s" % (mode, name, oid) for name, mode, oid in entries)


class ObjectStore:
    def __init__(self, git_dir: str) -> None:
        self.objects = os.fsencode(os.path.join(git_dir, "objects"))

    def _path(self, hexid: bytes) -> bytes:
        return b"%s/%s/%s" % (self.objects, hexid[:2], hexid[2:])

    def write(self, kind: bytes, body: bytes) -> bytes:
        """Store an object unless it is there already (loose); returns its 20-byte id. A copy in a
        pack is not looked for: a second, loose copy is harmless and the next gc drops it."""
        data = b"%s %d\0%s" % (kind, len(body), body)
        oid = hashlib.sha1(data).digest()
        path = self._path(oid.hex().encode())
        try:
            os.utime(path)  # exists: freshen it, as git does
            return oid
        except FileNotFoundError:
            pass
        folder = os.path.dirname(path)
        tmp = b"%s/tmp_obj_%s" % (folder, os.urandom(6).hex().encode())
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(zlib.compress(data, 1))
            os.rename(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return oid


def c_quote(path: bytes) -> bytes:
    """A path as a line for git's --stdin-paths readers: C-quoted when it holds a byte that a line
    cannot carry as it is (git's unquote_c_style reads octal escapes)."""
    if not any(b < 0x20 or b in (0x22, 0x5C, 0x7F) for b in path):
        return path
    out = bytearray(b'"')
    for b in path:
        if b < 0x20 or b == 0x7F:
            out += b"\\%03o" % b
        elif b in (0x22, 0x5C):
            out += b"\\" + bytes([b])
        else:
            out.append(b)
    return bytes(out + b'"')


class GitHasher:
    """`git hash-object -w --stdin-paths`, kept running: a blob as `git add` would store it when
    .gitattributes may convert content (eol, ident, filters). One path in, one id out."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.argv, self.cwd = argv, cwd
        self.proc: subprocess.Popen | None = None

    def hash(self, rel: bytes) -> bytes | None:
        """The blob id, or None if git could not read the file (it vanished meanwhile: git then
        exits, and the next call starts it again)."""
        if self.proc is None:
            self.proc = subprocess.Popen(
                [*self.argv, "hash-object", "-w", "--stdin-paths"],
                cwd=self.cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
        try:  # both pipes exist: the process was started with stdin and stdout PIPE
            self.proc.stdin.write(c_quote(rel) + b"\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
            line = self.proc.stdout.readline().strip()  # type: ignore[union-attr]
        except OSError:
            line = b""
        if len(line) == 40:
            return bytes.fromhex(line.decode())
        self.close()
        return None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            try:
                proc.stdin.close()  # type: ignore[union-attr]  # started with stdin PIPE
            except OSError:
                pass
            proc.kill()
            proc.wait()
