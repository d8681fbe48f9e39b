"""Host git never takes a session git dir's word for anything: jailed git writes that directory as the
sandbox uid, so whatever sits in it (a config with `url.*.insteadOf`, `http.proxy`, filters, hooks, an
`alternates` or `commondir` pointing elsewhere) is treated as planted. These tests plant each such thing
directly (what a git process compromised through the workspace could leave) and show that nothing of it
runs, applies, or is read from outside the jail, on commit, push, pull and diff."""

import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from sandbox import gitops
from tests.repos.conftest import TOKEN, operation_over_api, session_over_api

pytestmark = pytest.mark.timeout(240)


class Listener:
    """A TCP port on 127.0.0.1 that records every connection (a proxy or a rewritten URL would land here)
    and what the first bytes said."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(2)
            try:
                self.seen.append(conn.recv(4096))
            except OSError:
                self.seen.append(b"")
            conn.close()

    def close(self):
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


# Every key a repository config can use to run a program or send git elsewhere.
PLANTED = """[core]
\trepositoryformatversion = 0
\tbare = false
\tfsmonitor = {evil}
\thooksPath = {hooks}
\tsshCommand = {evil}
\tpager = {evil}
\teditor = {evil}
\taskPass = {evil}
\tgitProxy = {evil}
\tworktree = /
[credential]
\thelper = !{evil}
[filter "evil"]
\tclean = {evil}
\tsmudge = {evil}
\tprocess = {evil}
\trequired = true
[diff]
\texternal = {evil}
[diff "evil"]
\ttextconv = {evil}
\tcommand = {evil}
[merge "evil"]
\tdriver = {evil}
[url "http://127.0.0.1:{port}/"]
\tinsteadOf = {base}
\tpushInsteadOf = {base}
[http]
\tproxy = http://127.0.0.1:{port}
\textraHeader = X-Planted: 1
[remote "origin"]
\turl = http://127.0.0.1:{port}/x.git
\tpushurl = http://127.0.0.1:{port}/x.git
[uploadpack]
\tpackObjectsHook = {evil}
[sequence]
\teditor = {evil}
[commit]
\tgpgSign = true
[gpg]
\tprogram = {evil}
[include]
\tpath = {included}
"""


def _plant(gitdir: Path, base_url: str, port: int) -> Path:
    """Plant a config (and an included one, and hooks) whose every program writes to `pwned` in the git
    dir, which jailed and host git alike can reach. Returns that marker."""
    marker = gitdir / "pwned"
    evil = gitdir / "evil.sh"
    evil.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker} 2>/dev/null\ncat\n')
    hooks = gitdir / "evil-hooks"
    hooks.mkdir()
    for hook in (
        "pre-commit",
        "post-commit",
        "pre-push",
        "reference-transaction",
        "post-merge",
        "post-checkout",
    ):
        shutil.copy(evil, hooks / hook)
    included = gitdir / "included.cfg"
    included.write_text(f'[core]\n\tfsmonitor = {evil}\n[filter "evil"]\n\tclean = {evil}\n')
    (gitdir / "config").write_text(
        PLANTED.format(evil=evil, hooks=hooks, port=port, base=base_url, included=included)
    )
    for path in (evil, hooks, *hooks.iterdir(), included, gitdir / "config"):
        path.chmod(0o755)
        shutil.chown(path, 1000, 1000)
    return marker


def test_host_git_ignores_every_key_planted_in_a_sessions_git_config(
    api, alice, repo_project, gitserver, sessions_made, listener
):
    name = "private/app.git"
    repo_project(gitserver.url(name), token=TOKEN, username="alice")
    session, box, url = session_over_api(api, alice, sessions_made)
    gitdir = gitops.session_gitdir(session.pk)
    marker = _plant(gitdir, gitserver.url(""), listener.port)
    box.write("/workspace/.gitattributes", "* filter=evil diff=evil merge=evil\n")
    box.write("/workspace/src/app.py", "planted\n")
    before = len(gitserver.requests)

    pushed = operation_over_api(api, alice, url, "push", {"message": "after the plant"})
    assert pushed.status == "done", pushed.error
    gitserver.advance(name, pushed.result["branch"], "remote.txt", "moved\n")
    pulled = operation_over_api(api, alice, url, "pull", {})
    assert pulled.status == "done", pulled.error
    diff = api(alice).get(url + "diff/")
    assert diff.status_code == 200, diff.content
    gitops.commit_all(str(session.pk), "again", "A", "a@example.com")

    assert not marker.exists(), marker.read_text()  # no filter, hook, fsmonitor, gpg, editor... ran
    assert listener.seen == []  # no proxy, no rewritten URL: nothing went to the planted address
    pushes = [r for r in gitserver.requests[before:] if r["method"] == "POST"]
    assert pushes and all(r["path"].startswith(f"/{name}/") for r in pushes)
    assert gitserver.show(name, pushed.result["commit"], "src/app.py") == "planted\n"
    assert box.read("remote.txt").content.strip() == "moved"  # the pull merged the real remote branch
    # The control: the plant is live; host git that reads the git dir's config runs it.
    subprocess.run(
        ["git", "-c", "safe.directory=*", "--git-dir", str(gitdir), "--work-tree", "/tmp", "status"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        timeout=30,
    )
    assert marker.exists()


@pytest.fixture
def world_readable_store():
    """A git object store on the host that any uid can read, holding a commit with a secret file."""
    path = Path(tempfile.mkdtemp(prefix="hangar-host-store-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_host_git_never_reads_objects_a_session_git_dir_points_to_outside_the_jail(
    api, alice, repo_project, gitserver, sessions_made, world_readable_store
):
    """`objects/info/alternates` in a session git dir is the sandbox's to write: one that names a host
    object store (with a branch pointed at a commit in it) must not bring that store into a commit or a
    push. The jail binds only the mirror the host itself recorded."""
    name = f"public/alt-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# alt\n"})
    repo_project(gitserver.url(name))
    session, _box, url = session_over_api(api, alice, sessions_made)
    gitdir = gitops.session_gitdir(session.pk)
    base = (gitdir / "refs" / "hangar" / "base").read_text().strip()
    secret = f"HOST-SECRET-{uuid.uuid4().hex}"
    store = world_readable_store / "store.git"
    git = ["git", "--git-dir", str(store)]
    subprocess.run(["git", "init", "-q", "--bare", str(store)], check=True)
    blob = subprocess.run(
        [*git, "hash-object", "-w", "--stdin"], input=secret, text=True, capture_output=True, check=True
    ).stdout.strip()
    tree = subprocess.run(
        [*git, "mktree"],
        input=f"100644 blob {blob}\tsecret.txt\n",
        text=True,
        capture_output=True,
        check=True,
    ).stdout.strip()
    env = {
        "GIT_AUTHOR_NAME": "x",
        "GIT_AUTHOR_EMAIL": "x@x",
        "GIT_COMMITTER_NAME": "x",
        "GIT_COMMITTER_EMAIL": "x@x",
    }
    # No parent: the store needs nothing of the mirror to make the commit whole.
    commit = subprocess.run(
        [*git, "commit-tree", tree, "-m", "secret"],
        text=True,
        capture_output=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", **env},
    ).stdout.strip()
    subprocess.run(["chmod", "-R", "a+rX", str(world_readable_store)], check=True)
    alternates = gitdir / "objects" / "info" / "alternates"
    alternates.write_text(alternates.read_text() + f"{store / 'objects'}\n")
    branch = gitops.current_branch(str(session.pk))
    (gitdir / "refs" / "heads" / branch).write_text(commit + "\n")
    assert base != commit

    pushed = operation_over_api(api, alice, url, "push", {"message": "on top of the host's commit"})

    served = gitserver.root / name
    found = subprocess.run(["git", "--git-dir", str(served), "cat-file", "-e", blob], capture_output=True)
    assert found.returncode != 0, "the host object store's secret reached the remote"
    assert pushed.status == "failed"  # the planted branch names a commit the jail cannot see
