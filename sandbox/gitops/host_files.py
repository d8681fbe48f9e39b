"""The host's own files for each session git dir, beside it in repos/<key>.host/ (root's alone): the config
git reads for that git dir and the object stores it may borrow. Written when the git dir is made
(sandbox.gitops.worktree), bound over the git dir's own in the jail (sandbox.gitops.run)."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from sandbox import repo_disk

ALTERNATES = "objects/info/alternates"
SESSION_CONFIG = (
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    "\tlogallrefupdates = true\n\tcheckStat = minimal\n"
)


@dataclass(frozen=True)
class _SessionFiles:
    """What git may believe about a session git dir, kept by the host beside it (repos/<key>.host/, root's
    alone): its config and the object stores it borrows. Jailed git writes the git dir as the sandbox
    uid, so a config or `alternates` there is never read: these two are bound over them in the jail."""

    config: Path
    alternates: Path

    def stores(self) -> set[Path]:
        return {Path(line) for line in self.alternates.read_text().split() if line.startswith("/")}


def _host_dir(gitdir: Path) -> Path:
    return gitdir.with_suffix(".host")


def _write_host_files(gitdir: Path, mirror_objects: Path) -> None:
    host = _host_dir(gitdir)
    tmp = host.with_name(f".{host.name}.{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    os.chmod(tmp, 0o755)  # whatever this process's umask
    (tmp / "config").write_text(SESSION_CONFIG)
    (tmp / "alternates").write_text(f"{mirror_objects}\n")
    for name in ("config", "alternates"):
        os.chmod(tmp / name, 0o644)
    shutil.rmtree(host, ignore_errors=True)
    os.rename(tmp, host)


def _session_files(gitdir: Path) -> _SessionFiles:
    """The host's files for `gitdir`, made from what the git dir says only where that is a mirror of
    ours (a git dir written before the host kept its own). The git dir's own config and alternates are
    made plain files, so the host's can be bound over them."""
    host = _host_dir(gitdir)
    if not (host / "alternates").is_file():
        named = gitdir / ALTERNATES
        lines = named.read_text().split() if named.is_file() and not named.is_symlink() else []
        mirrors = repo_disk.mirrors_dir().resolve()
        ours = [Path(line) for line in lines if Path(line).resolve().parent.parent == mirrors]
        _write_host_files(gitdir, ours[0] if ours else mirrors / "none.git" / "objects")
    for name in ("config", ALTERNATES):
        path = gitdir / name
        if path.is_symlink() or not path.is_file():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("")
    return _SessionFiles(config=host / "config", alternates=host / "alternates")
