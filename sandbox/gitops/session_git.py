"""Git on a session's git dir once it is checked out: commit the workspace, read its head and branch, push
it (bundled in the jail, pushed by host git from a git dir of its own, so the git holding the credential
never opens the session's), merge fetched commits into it, and diff the workspace against the commit it
was cloned at."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Any

from sandbox import volumes
from sandbox.gitops.host_files import ALTERNATES, _session_files
from sandbox.gitops.remote import GitError, Remote
from sandbox.gitops.run import GIT_TIMEOUT_S, _prepared, git
from sandbox.gitops.worktree import session_gitdir, workspace_dir


def commit_all(session_id: str, message: str, author_name: str, author_email: str) -> str | None:
    """Stage everything in the workspace (its .gitignore honoured) and commit; None if nothing changed."""
    gitdir, worktree = session_gitdir(session_id), workspace_dir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(worktree))
    git(*g, "add", "--all", as_sandbox_user=True, session=gitdir)
    if git(*g, "diff", "--cached", "--quiet", check=False, session=gitdir).returncode == 0:
        return None
    who = {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": author_name,
        "GIT_COMMITTER_EMAIL": author_email,
    }
    git(*g, "commit", "--quiet", "--no-verify", "-m", message, env=who, session=gitdir)
    return head(session_id)


def head(session_id: str) -> str:
    gitdir = session_gitdir(session_id)
    sha = git(
        "--git-dir", str(gitdir), "rev-parse", "--verify", "HEAD^{commit}", session=gitdir
    ).stdout.strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha):
        raise GitError(f"The session's HEAD is not a commit: {sha[:100]!r}.")
    return sha


def current_branch(session_id: str) -> str:
    gitdir = session_gitdir(session_id)
    return git("--git-dir", str(gitdir), "symbolic-ref", "--short", "HEAD", session=gitdir).stdout.strip()


def push(session_id: str, remote: Remote, branch: str) -> str:
    """Push the session's branch (never forced); GitError(kind="rejected") when the remote branch moved.

    The session git dir is the sandbox uid's, so the git that holds the credential never opens it: jailed
    git bundles the commits the mirror lacks, and host git pushes from a git dir of its own (its config
    ours, its objects that bundle and the mirror's)."""
    gitdir = session_gitdir(session_id)
    sha = head(session_id)
    stores = _session_files(gitdir).stores()
    with tempfile.TemporaryDirectory(prefix="hangar-push-") as tmp:
        shadow, out = Path(tmp) / "push.git", Path(tmp) / "out"
        git("init", "--bare", "--quiet", str(shadow))
        (shadow / ALTERNATES).write_text("".join(f"{store}\n" for store in sorted(stores)))
        have = git("--git-dir", str(shadow), "cat-file", "-e", f"{sha}^{{commit}}", check=False)
        if have.returncode != 0:
            out.mkdir()
            os.chown(out, volumes.SANDBOX_UID, volumes.SANDBOX_UID)
            bundle = out / "push.bundle"
            # The jail makes the index's folder writable: that is where the bundle goes.
            bundling = {"GIT_INDEX_FILE": str(out / "index")}
            create = ("bundle", "create", "-q", str(bundle), "HEAD", "--not", "refs/hangar/base")
            git("--git-dir", str(gitdir), *create, session=gitdir, env=bundling)
            git("--git-dir", str(shadow), "bundle", "unbundle", str(bundle))
        git(
            "--git-dir",
            str(shadow),
            "push",
            "--quiet",
            "--porcelain",
            remote.url,
            f"{sha}:refs/heads/{branch}",
            remote=remote,
        )
    return sha


def merge(session_id: str, sha: str, author_name: str, author_email: str) -> str:
    """Merge commit `sha` (fetched into the mirror) into the session's branch, work tree included; a
    conflict leaves everything as it was and raises GitError(kind="conflict")."""
    gitdir = session_gitdir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(workspace_dir(session_id)))
    who = {
        "GIT_AUTHOR_NAME": author_name,
        "GIT_AUTHOR_EMAIL": author_email,
        "GIT_COMMITTER_NAME": author_name,
        "GIT_COMMITTER_EMAIL": author_email,
    }
    proc = git(*g, "merge", "--no-edit", "--no-verify", sha, env=who, session=gitdir, check=False)
    if proc.returncode != 0:
        git(*g, "merge", "--abort", session=gitdir, check=False)
        output = (proc.stdout + proc.stderr).strip()[-4000:]
        raise GitError(f"The remote changes do not merge cleanly: {output}", kind="conflict", output=output)
    return head(session_id)


def diff_base(session_id: str, max_patch_bytes: int) -> dict[str, Any]:
    """The workspace as it is now (untracked files included, .gitignore honoured) against the commit it
    was cloned at: per-file additions/deletions and the unified patch, cut at `max_patch_bytes`. Staged
    in a throwaway index, so the session's own index is untouched."""
    gitdir = session_gitdir(session_id)
    g = ("--git-dir", str(gitdir), "--work-tree", str(workspace_dir(session_id)))
    index = gitdir / f"index.diff-{uuid.uuid4().hex[:8]}"
    try:
        _copy_nofollow(gitdir / "index", index)
        env = {"GIT_INDEX_FILE": str(index)}
        git(*g, "add", "--all", env=env, session=gitdir)
        diff = ("diff", "--cached", "--no-renames", "--no-ext-diff", "--no-textconv", "refs/hangar/base")
        numstat = git(*g, *diff, "--numstat", "-z", env=env, session=gitdir).stdout
        names = git(*g, *diff, "--name-status", "-z", env=env, session=gitdir).stdout
        patch, truncated = _git_bounded((*g, *diff, "--patch"), env, max_patch_bytes, gitdir)
    finally:
        index.unlink(missing_ok=True)
    fields = names.split("\0")
    status = dict(zip(fields[1::2], fields[0::2], strict=False))
    files = []
    for entry in numstat.split("\0"):
        parts = entry.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, path = parts
        binary = added == "-"
        files.append(
            {
                "path": path,
                "status": {"A": "added", "D": "deleted"}.get(status.get(path, "M"), "modified"),
                "additions": 0 if binary else int(added),
                "deletions": 0 if binary else int(deleted),
                "binary": binary,
            }
        )
    return {"files": files, "patch": patch, "truncated": truncated}


def _copy_nofollow(source: Path, target: Path) -> None:
    """Copy a file of a session git dir, owned by the sandbox uid; a link there is not followed (a missing
    or linked index leaves none: git then stages from nothing)."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return
        with open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.chown(target, volumes.SANDBOX_UID, volumes.SANDBOX_UID)


def _git_bounded(args: tuple[str, ...], env: dict[str, str], cap: int, gitdir: Path) -> tuple[str, bool]:
    """Run git (hardened, jailed over a session git dir) and keep at most `cap` bytes of its output."""
    with (
        _prepared(args, env, None, as_sandbox_user=True, session=gitdir) as (command, full_env),
        subprocess.Popen(
            command,
            env=full_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd="/",
        ) as proc,
    ):
        assert proc.stdout is not None
        out = proc.stdout.read(cap + 1)
        truncated = len(out) > cap
        if truncated:
            proc.kill()
        else:
            proc.wait(timeout=GIT_TIMEOUT_S)
    return out[:cap].decode("utf-8", "replace"), truncated
