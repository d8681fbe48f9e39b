"""A tar stream (Docker's archive of a container path) re-packed as a zip, streamed: nothing is held but
the file being copied, and zipfile writes to a sink it cannot seek (so each entry carries a data
descriptor). Directories, regular files and symlinks (as zip symlink entries, never followed) are kept;
other members (devices, fifos) are skipped. The tar input is cut at `cap` bytes."""

from __future__ import annotations

import io
import posixpath
import stat
import tarfile
import time
import zipfile
from collections.abc import Iterable, Iterator

COPY_CHUNK = 256 * 1024


class _CapReached(Exception):
    pass


class _Reader(io.RawIOBase):
    """The tar chunks as a file, refusing to read past `cap` bytes."""

    def __init__(self, chunks: Iterable[bytes], cap: int):
        self.chunks, self.cap, self.read_total, self.buffer = iter(chunks), cap, 0, b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: bytearray | memoryview) -> int:  # type: ignore[override]
        while not self.buffer:
            chunk = next(self.chunks, None)
            if chunk is None:
                return 0
            self.read_total += len(chunk)
            if self.read_total > self.cap:
                raise _CapReached
            self.buffer = chunk
        size = min(len(target), len(self.buffer))
        target[:size] = self.buffer[:size]
        self.buffer = self.buffer[size:]
        return size


class _Sink:
    """Where zipfile writes; drained after every step."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.position = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        pass

    def drain(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


def _info(name: str, member: tarfile.TarInfo, kind: int) -> zipfile.ZipInfo:
    stamp = time.gmtime(max(member.mtime, 315532800))[:6]  # zip dates start in 1980
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.external_attr = (kind | (member.mode & 0o7777)) << 16
    info.create_system = 3  # unix: the mode bits above are read
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def from_tar(chunks: Iterable[bytes], cap: int) -> Iterator[bytes]:
    sink = _Sink()
    # _Sink has what zipfile uses of an unseekable file (write, tell, flush), not all of IO[bytes].
    archive = zipfile.ZipFile(sink, "w", allowZip64=True)  # type: ignore[call-overload]
    try:
        with tarfile.open(fileobj=_Reader(chunks, cap), mode="r|") as tar:
            for member in tar:
                name = posixpath.normpath(member.name).lstrip("/")
                if name in ("", ".") or name.startswith("../"):
                    continue
                if member.isdir():
                    archive.writestr(_info(name + "/", member, stat.S_IFDIR), b"")
                elif member.issym():
                    archive.writestr(_info(name, member, stat.S_IFLNK), member.linkname)
                elif member.isfile():
                    source = tar.extractfile(member)
                    assert source is not None
                    with archive.open(_info(name, member, stat.S_IFREG), "w", force_zip64=True) as out:
                        while block := source.read(COPY_CHUNK):
                            out.write(block)
                            yield sink.drain()
                yield sink.drain()
        archive.close()
        yield sink.drain()
    except _CapReached:
        return  # cut short, as the tar.gz is
    finally:
        close = getattr(chunks, "close", None)
        if close:
            close()
