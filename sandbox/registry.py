"""The host-side session registry: which volume (and org, and sandbox settings) a session has, what it
last ran in, and whether the disk's watermark paused it. One small file per session under
ROOT/sessions, independent of Docker labels, which cannot be changed after creation (a pooled container
is bound by renaming it).

<key>.json is the record (its mtime is the reaper's idle clock); <key>.cid remembers the container last
seen running (its id, and its init's host pid and start time), so that a later first contact can tell
from /proc that it still runs and attach without asking Docker which container that is and whether it
runs; <key>.paused says why sandbox.watermark paused it. Every write goes to a temporary file renamed
into place, so a reader sees the old or the new file whole.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any

from sandbox import volumes


def _sessions() -> Path:
    return volumes.ROOT / "sessions"  # read at each call: tests point ROOT elsewhere


def _record_path(key: str) -> Path:
    return _sessions() / f"{key}.json"


def register(key: str, record: dict[str, Any]) -> bool:
    """Create the session's record atomically; False if the session is already registered."""
    sessions = _sessions()
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(record | {"created_at": time.time()}))
    try:
        os.link(tmp, _record_path(key))  # link fails if the name exists: an atomic create
        return True
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)


def rewrite(key: str, record: dict[str, Any]) -> None:
    """Replace an existing record whole (atomic: readers see the old or the new one)."""
    sessions = _sessions()
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, _record_path(key))


def lookup(key: str) -> dict[str, Any] | None:
    try:
        record: dict[str, Any] = json.loads(_record_path(key).read_text())
        record["last_active"] = _record_path(key).stat().st_mtime
        return record
    except (FileNotFoundError, ValueError):
        return None


def touch(key: str) -> None:
    """Mark activity (the reaper's idle clock is the record's mtime)."""
    try:
        os.utime(_record_path(key))
    except FileNotFoundError:
        pass


def unregister(key: str) -> None:
    _record_path(key).unlink(missing_ok=True)
    _hint_path(key).unlink(missing_ok=True)
    paused_path(key).unlink(missing_ok=True)
    _channel_path(key).unlink(missing_ok=True)


# --- a sandbox paused at the disk's watermark (sandbox.watermark) -----------------------------


def paused_path(key: str) -> Path:
    return _sessions() / f"{key}.paused"


def mark_paused(key: str, scope: str, reason: str) -> None:
    sessions = _sessions()
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.paused.tmp"
    tmp.write_text(json.dumps({"scope": scope, "reason": reason, "at": time.time()}))
    os.replace(tmp, paused_path(key))


def clear_paused(key: str) -> None:
    paused_path(key).unlink(missing_ok=True)


def _paused(key: str) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads(paused_path(key).read_text())
        return data
    except (FileNotFoundError, ValueError):
        return None


def paused_reason(key: str) -> str | None:
    """Why the session's sandbox is paused (None: it is not). One failed open when it is not."""
    data = _paused(key)
    return str(data.get("reason", "")) if data is not None else None


def paused_scope(key: str) -> str | None:
    data = _paused(key)
    return str(data.get("scope", "")) if data is not None else None


def registered_keys() -> list[str]:
    sessions = _sessions()
    return sorted(p.stem for p in sessions.glob("*.json")) if sessions.exists() else []


# A record's (org, volume), cached by the file's inode: every write replaces the file whole (a new inode,
# never the one it replaces: both exist at the rename), and the directory listing gives each name's inode
# without a stat, so a budget check over ten thousand records opens and stats only the changed ones.
_owners: dict[str, tuple[int, str, str]] = {}


def org_volumes() -> list[tuple[str, str]]:
    """(org id, volume id) of every registered session that has both: what the disk budgets count."""
    return [(org, volume) for _key, org, volume in volume_owners() if org]


def volume_owners() -> list[tuple[str, str, str]]:
    """(key, org id, volume id) of every registered session that has a volume (org "" if it names none)."""
    sessions = _sessions()
    found: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    try:
        entries = list(os.scandir(sessions))
    except FileNotFoundError:
        return found
    for entry in entries:
        if not entry.name.endswith(".json") or entry.name.startswith("."):
            continue
        identity = entry.inode()
        cached = _owners.get(entry.name)
        if cached is None or cached[0] != identity:
            record = lookup(entry.name[: -len(".json")]) or {}
            cached = (identity, str(record.get("org_id") or ""), str(record.get("volume") or ""))
            _owners[entry.name] = cached
        seen.add(entry.name)
        if cached[2]:
            found.append((entry.name[: -len(".json")], cached[1], cached[2]))
    for gone in _owners.keys() - seen:
        _owners.pop(gone, None)
    return found


# --- which container a session had last: a hint for the next first contact ------------------


def _hint_path(key: str) -> Path:
    return _sessions() / f"{key}.cid"


def container_hint(key: str) -> tuple[str, int, int] | None:
    """(container id, its init's host pid, that process's start time) as recorded when the session's
    container was last seen running; None if not recorded."""
    try:
        cid, pid, start = _hint_path(key).read_text().split()
        return (cid, int(pid), int(start)) if re.fullmatch(r"[0-9a-f]{64}", cid) else None
    except (FileNotFoundError, ValueError):
        return None


def process_start(pid: int, container_id: str) -> int | None:
    """The start time (clock ticks since boot) of process `pid` if it runs in container `container_id`
    (its cgroup path names the container), else None. With the pid it names one process for good: a
    pid is reused, never with the same start time. The cgroup check keeps this honest where this
    process sees another pid namespace than Docker's (a pid naming some unrelated process)."""
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            if container_id.encode() not in f.read():
                return None
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def note_container(key: str, container_id: str, pid: int) -> None:
    start = process_start(pid, container_id) if pid > 0 else None
    if start is None:
        return
    sessions = _sessions()
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.cid.tmp"
    tmp.write_text(f"{container_id} {pid} {start}")
    os.replace(tmp, _hint_path(key))


# --- where a session's agent listens (the TCP agent channel, sandbox/channel.py) ---------------


def _channel_path(key: str) -> Path:
    return _sessions() / f"{key}.channel"


def note_channel(key: str, address: str, port: int, volume_id: str) -> None:
    """Record the agent's address for workers without Docker; written when the host sees it start."""
    sessions = _sessions()
    sessions.mkdir(parents=True, exist_ok=True)
    tmp = sessions / f".{key}.{uuid.uuid4().hex}.channel.tmp"
    tmp.write_text(json.dumps({"address": address, "port": port, "volume": volume_id}))
    os.replace(tmp, _channel_path(key))


def channel_endpoint(key: str) -> tuple[str, int, str] | None:
    """(address, port, volume id) of the session's agent as last recorded; None if never."""
    try:
        data = json.loads(_channel_path(key).read_text())
        return str(data["address"]), int(data["port"]), str(data["volume"])
    except (FileNotFoundError, ValueError, KeyError, TypeError):
        return None
