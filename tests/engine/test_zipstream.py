"""The workspace's zip is re-packed from Docker's tar stream as it arrives, and cut at the size cap."""

import io
import tarfile
import zipfile

from hangar.engine.workspace import zipstream


def _tar(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
        fifo = tarfile.TarInfo("./pipe")
        fifo.type = tarfile.FIFOTYPE
        tar.addfile(fifo)
    return out.getvalue()


def _chunks(data: bytes, size: int = 1000):
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_a_tar_stream_becomes_a_zip_with_modes_and_no_special_files():
    files = {"./a.txt": b"alpha\n", "./dir/b.bin": bytes(range(256)) * 4000}
    data = b"".join(zipstream.from_tar(_chunks(_tar(files)), cap=10 * 2**20))
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert sorted(archive.namelist()) == ["a.txt", "dir/b.bin"]
        assert archive.read("dir/b.bin") == files["./dir/b.bin"] and archive.read("a.txt") == b"alpha\n"
        assert archive.getinfo("a.txt").external_attr >> 16 == 0o100755
        assert archive.getinfo("a.txt").date_time[0] == 1980  # clamped: zip dates start there


def test_the_zip_stops_at_the_cap_and_the_source_is_closed():
    closed = []

    class Source(list):
        def close(self):
            closed.append(True)

    tar = _tar({"./big.bin": b"x" * 300_000})
    out = b"".join(zipstream.from_tar(Source(_chunks(tar)), cap=100_000))
    assert len(out) < 100_000 and closed == [True]
    try:
        zipfile.ZipFile(io.BytesIO(out))
        raise AssertionError("a cut-short zip must not read as complete")
    except zipfile.BadZipFile:
        pass
