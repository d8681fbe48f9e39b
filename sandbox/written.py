"""What every workspace image holds, for the disk budgets, without a stat per hibernated image per check.

The budgets (sandbox.budget) count the blocks each volume's image holds, by org. Read afresh at every
check, that was a stat of every image and of every registry record, under the host-wide budget lock:
434 ms per new sandbox with ten thousand hibernated sessions on the host (bench/hibernated.py). But an
image changes only while it is mounted (a sandbox writes through its loop device; hibernate compacts it,
then unmounts it), so what an unmounted image holds is kept here, per process, until the image is mounted
again; the mounted ones (a thousand at most: the live sandboxes) are read afresh each time.

Another process may mount, write and unmount an image between two checks of this one. So every mount and
every unmount of a volume is told in a log beside the images (`volumes.note_mount`: one line per event, the
volume's id, appended before the mount and after the unmount): a check first reads the lines appended since
its last one and forgets those volumes. Whatever this process saw of an image unmounted stays true until
the next mount, whose line comes first; a figure taken while a mount was under way is forgotten at its
unmount's line. A log that was replaced or cut makes this process forget everything.

Which org a volume belongs to is sandbox.registry's `org_volumes`, cached by each record's inode.
"""

from __future__ import annotations

import os
import threading

from sandbox import volumes

_lock = threading.Lock()
_images: dict[str, tuple[int, int]] = {}  # volume -> (quota, written) bytes, of images seen unmounted


class _LogPosition:
    identity: tuple[int, int] | None = None  # the log file's (device, inode)
    offset = 0  # read up to here


_seen = _LogPosition()


def _read_log() -> None:
    """Forget the volumes mounted or unmounted since the last read (volumes.note_mount)."""
    try:
        with open(volumes.mounts_log(), "rb") as f:
            st = os.fstat(f.fileno())
            if (st.st_dev, st.st_ino) != _seen.identity or st.st_size < _seen.offset:
                _images.clear()  # another log (or cut short): nothing cached can be vouched for
                _seen.identity, _seen.offset = (st.st_dev, st.st_ino), 0
            f.seek(_seen.offset)
            data = f.read()
    except FileNotFoundError:
        if _seen.identity is not None:
            _images.clear()
            _seen.identity, _seen.offset = None, 0
        return
    complete = data[: data.rfind(b"\n") + 1]  # a line being written is read whole next time
    _seen.offset += len(complete)
    for line in complete.split():
        _images.pop(line.decode(errors="replace"), None)


def images() -> dict[str, tuple[int, int]]:
    """volume id -> (quota, written) bytes of every volume image on this host."""
    images_dir, mnt_dir = volumes.ROOT / "volumes", volumes.ROOT / "mnt"
    with _lock:
        _read_log()  # first: a mount after this read is told by a line the next check reads
        try:
            names = {e.name[:-4] for e in os.scandir(images_dir) if e.name.endswith(".img")}
        except FileNotFoundError:
            names = set()
        try:
            mounted = set(os.listdir(mnt_dir))  # a mount point exists while its volume is mounted
        except FileNotFoundError:
            mounted = set()
        out: dict[str, tuple[int, int]] = {}
        for volume in names:
            known = _images.get(volume) if volume not in mounted else None
            if known is None:
                try:
                    st = os.stat(images_dir / f"{volume}.img")
                except FileNotFoundError:
                    continue  # destroyed meanwhile
                known = (st.st_size, min(st.st_blocks * 512, st.st_size))
                if volume not in mounted:
                    _images[volume] = known
            out[volume] = known
        for gone in _images.keys() - names:
            del _images[gone]
        return out
