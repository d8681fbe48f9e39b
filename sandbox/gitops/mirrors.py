"""The bare mirrors under mirrors/, one per (org, URL): cloned or fetched under a lock within the room the
disk budgets leave, the branches, tags and commits resolved in them, and their removal once idle, when no
session git dir borrows their objects and no volume stands on one of their layers."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from sandbox import budget, repo_disk, volumes
from sandbox.gitops.host_files import ALTERNATES, _host_dir
from sandbox.gitops.layers import has_live_users, layers_dir, remove_layer
from sandbox.gitops.remote import GitError, Remote
from sandbox.gitops.run import git


def mirrors_dir() -> Path:
    return repo_disk.mirrors_dir()


def mirror_path(scope: str, url: str) -> Path:
    """One mirror per (scope, URL): the scope (the org) keeps one tenant's fetched private objects from
    serving another tenant that names the same URL without the right to read it."""
    return mirrors_dir() / (hashlib.sha256(f"{scope}\0{url}".encode()).hexdigest()[:32] + ".git")


def _fetch_room(scope: str, elsewhere: Mapping[str, float] | None) -> int:
    """The most this clone or fetch may write (sandbox.budget.repo_room_bytes), GitError(kind="quota")
    when there is no room at all."""
    room = budget.repo_room_bytes(scope, elsewhere=elsewhere)
    if room <= 0:
        raise GitError(
            "The organisation's disk budget has no room left for repositories: remove sessions or ask the "
            "operator for a larger budget.",
            kind="quota",
        )
    return room


def _too_large(exc: GitError, room: int) -> GitError:
    if exc.kind != "quota":
        return exc
    return GitError(
        f"The repository is larger than the {room // 2**20} MB a fetch may write here (the repository "
        "size limit, HANGAR_REPO_MAX_MB, or the disk budget left): nothing was kept.",
        kind="quota",
        output=exc.output,
    )


def mirror_sync(remote: Remote, scope: str, elsewhere: Mapping[str, float] | None = None) -> Path:
    """Create the mirror (`clone --mirror`) or bring it up to date (`fetch --prune`), under a lock. Either
    stops at the room the disk budgets leave (_fetch_room; `elsewhere`: MB by org on the other sandbox
    hosts) with GitError(kind="quota"); a clone that stops leaves nothing, a fetch that stops leaves the
    mirror as it was."""
    path = mirror_path(scope, remote.url)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o755)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        room = _fetch_room(scope, elsewhere)
        # unpackLimit 1: what is fetched stays one pack, one file, so the size cap applies to all of it.
        packed = ("-c", "fetch.unpackLimit=1", "-c", "transfer.unpackLimit=1")
        try:
            if (path / "HEAD").exists():
                _readable_by_sandbox(path)
                git(*packed, "--git-dir", str(path), "fetch", "--prune", "--quiet", remote.url,
                    "+refs/*:refs/*", remote=remote, max_bytes=room)  # fmt: skip
            else:
                tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
                try:
                    git(*packed, "clone", "--mirror", "--quiet", "--", remote.url, str(tmp), remote=remote,
                        max_bytes=room)  # fmt: skip
                    git("--git-dir", str(tmp), "config", "remote.origin.url", remote.url)
                    os.rename(tmp, path)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        except GitError as exc:
            raise _too_large(exc, room) from None
        finally:
            for stray in (path / "objects" / "pack").glob("tmp_*"):
                stray.unlink(missing_ok=True)
        repo_disk.mark_used(path, scope)
        repo_disk.measure_mirror(path)
    return path


def _readable_by_sandbox(mirror: Path) -> None:
    """Repair a mirror that git wrote under umask 077 (deploy/up.sh's, before git ran with its own): the
    jailed checkout reads its objects as the sandbox uid. Checked on the objects folder, so once."""
    if (mirror / "objects").stat().st_mode & 0o005 == 0o005:
        return
    for folder, _dirs, files in os.walk(mirror):
        os.chmod(folder, os.stat(folder).st_mode | 0o555)
        for name in files:
            file = os.path.join(folder, name)
            if not os.path.islink(file):
                os.chmod(file, os.stat(file).st_mode | 0o444)


def resolve_ref(mirror: Path, ref: str) -> str:
    """The commit a branch, tag or commit id names in the mirror."""
    if not ref or ref.startswith("-") or len(ref) > 250:
        raise GitError(f"Bad ref {ref!r}.", kind="invalid")
    for candidate in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref):
        proc = git(
            "--git-dir",
            str(mirror),
            "rev-parse",
            "--verify",
            "--quiet",
            f"{candidate}^{{commit}}",
            check=False,
        )
        if proc.returncode == 0:
            return proc.stdout.strip()
    raise GitError(f"No branch, tag or commit {ref!r} in the repository.", kind="not_found")


def default_branch(mirror: Path) -> str:
    proc = git("--git-dir", str(mirror), "symbolic-ref", "--short", "HEAD", check=False)
    return proc.stdout.strip() or "main"


def _borrowed_mirrors() -> set[str]:
    """The object stores session git dirs borrow (the host's own records, and a git dir's own file where
    the host kept none): a mirror named there stays."""
    named: set[str] = set()
    repos = volumes.ROOT / "repos"
    if not repos.exists():
        return named
    for record in repos.glob("*.host/alternates"):
        named.update(record.read_text().split())
    for gitdir in repos.glob("*.git"):
        if not (_host_dir(gitdir) / "alternates").exists():
            try:
                named.update((gitdir / ALTERNATES).read_text().split())
            except OSError:
                continue
    return named


def prune_mirrors(idle_s: float | None = None, now: float | None = None) -> list[str]:
    """Remove the mirrors nobody used for `idle_s` (HANGAR_REPO_MIRROR_IDLE_DAYS) that no session git dir
    borrows from and no volume stands on a layer of, with their unused layers."""
    idle_s = repo_disk.mirror_idle_s() if idle_s is None else idle_s
    now = time.time() if now is None else now
    if not mirrors_dir().exists():
        return []
    borrowed = _borrowed_mirrors()
    removed = []
    for mirror in mirrors_dir().glob("*.git"):
        if now - repo_disk.last_used(mirror) < idle_s or str(mirror / "objects") in borrowed:
            continue
        layers = list(layers_dir().glob(f"{mirror.stem}-*")) if layers_dir().exists() else []
        if any(has_live_users(layer) for layer in layers):
            continue
        with open(mirror.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if now - repo_disk.last_used(mirror) < idle_s:
                continue  # fetched meanwhile
            doomed = mirror.with_name(f".{mirror.name}.gone-{uuid.uuid4().hex[:8]}")
            os.rename(mirror, doomed)
            for suffix in (".org", ".size"):
                mirror.with_suffix(suffix).unlink(missing_ok=True)
        shutil.rmtree(doomed, ignore_errors=True)
        for layer in layers:
            remove_layer(layer)
        removed.append(mirror.name)
    return removed
