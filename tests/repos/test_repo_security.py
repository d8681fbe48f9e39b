"""The repository credential never reaches the sandbox (environment, files, processes, git config) nor any
event or log; a repository's own hooks, fsmonitor and filters never execute on the host, whether the
repository ships them or the sandbox plants them before a commit."""

import base64
import json
import logging
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from hangar.conversations.models import Event
from hangar.repos.models import RepoPush, WorkspaceOperation
from sandbox import gitops
from tests.repos.conftest import FILES, TOKEN, operation_over_api, session_over_api

pytestmark = pytest.mark.timeout(240)


def test_the_credential_never_appears_in_the_sandbox_events_or_logs(
    api, alice, repo_project, gitserver, sessions_made, caplog
):
    caplog.set_level(logging.DEBUG)
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice", setup="sleep 2 &")
    session, box, url = session_over_api(api, alice, sessions_made)
    box.write("/workspace/change.txt", "x\n")
    assert operation_over_api(api, alice, url, "push", {"message": "change"}).status == "done"
    header = base64.b64encode(f"alice:{TOKEN}".encode()).decode()
    assert any(r["authorization"] == f"Basic {header}" for r in gitserver.requests)  # the server saw it
    secrets = (TOKEN, header)
    probes = {
        "environment": "env; cat /proc/1/environ | tr '\\0' '\\n'",
        "processes": "ps -eo args; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done 2>/dev/null",
        "git config": "git config --list --show-origin 2>&1; cat ~/.gitconfig ~/.git-credentials 2>&1; ls -a",
        "files": 'grep -rIl -e "$NEEDLE" -e "$NEEDLE2" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; echo scanned',
    }
    for what, command in probes.items():
        result = box.exec(command, env={"NEEDLE": TOKEN[:20], "NEEDLE2": header[:20]}, timeout_s=120)
        found = result.output.replace(TOKEN[:20], "").replace(header[:20], "")  # the probe's own argv
        assert not any(s in found for s in secrets), what
        if what == "files":
            assert result.output.strip().endswith("scanned") and "/" not in result.output.replace(
                "scanned", ""
            )
    events = json.dumps([e.payload for e in Event.objects.filter(session=session)])
    pushes = json.dumps([p.error for p in RepoPush.objects.filter(session=session)])
    pushes += json.dumps(list(WorkspaceOperation.objects.values("params", "result", "error")))
    logged = "\n".join(r.getMessage() + str(r.__dict__) for r in caplog.records)
    for blob in (events, pushes, logged):
        assert not any(s in blob for s in secrets)
    for config in (
        gitops.session_gitdir(session.pk) / "config",
        next(gitops.mirrors_dir().glob("*.git")) / "config",
    ):
        assert not any(s in config.read_text() for s in secrets)


def test_a_repositorys_hooks_fsmonitor_and_filters_never_run_on_the_host(
    api, alice, repo_project, gitserver, sessions_made
):
    marker = Path(f"/tmp/hangar-pwned-{uuid.uuid4().hex}")
    evil = f"touch {marker}"
    name = f"public/evil-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(
        name,
        {
            **FILES,
            # What a repository can ship: hooks and git config in its tree, filters and a diff driver named
            # by .gitattributes. None of it may be honoured by host-side git.
            ".githooks/post-checkout": f"#!/bin/sh\n{evil}\n",
            ".githooks/pre-commit": f"#!/bin/sh\n{evil}\n",
            ".gitconfig": f'[core]\n\thooksPath = .githooks\n\tfsmonitor = {evil}\n[filter "evil"]\n\tclean = {evil}\n\tsmudge = {evil}\n',
            ".gitattributes": "* filter=evil diff=evil\n",
            ".lfsconfig": f"[lfs]\n\turl = {evil}\n",
        },
    )
    repo_project(gitserver.url(name))
    session, box, url = session_over_api(api, alice, sessions_made)
    assert box.read(".githooks/post-checkout").content.strip().endswith(evil)  # it was checked out
    # What the sandbox can plant before asking the host to commit: a .git with config and hooks at the
    # top, and a nested repository with its own.
    plant = f"""
set -e
git init -q sub && git -C sub -c user.name=a -c user.email=a@b commit -q --allow-empty -m nested
for d in .git sub/.git; do
  mkdir -p $d/hooks
  printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = {evil}\\n\\thooksPath = hooks\\n[filter "evil"]\\n\\tclean = {evil}\\n' > $d/config
  for h in pre-commit post-commit pre-push commit-msg post-index-change; do printf '#!/bin/sh\\n{evil}\\n' > $d/hooks/$h; chmod +x $d/hooks/$h; done
done
echo 'ref: refs/heads/main' > .git/HEAD; mkdir -p .git/objects .git/refs
echo changed > src/app.py
"""
    assert box.exec(plant).exit_code == 0
    pushed = operation_over_api(api, alice, url, "push", {"message": "planted"})
    assert pushed.status == "done", pushed.error
    pulled = operation_over_api(api, alice, url, "pull", {})
    assert pulled.status == "done", pulled.error
    assert not marker.exists()
    assert gitserver.show(name, pushed.result["commit"], "src/app.py") == "changed\n"
    # The control: the planted config is live; naive host git (ownership check off) in that tree runs it.
    work = gitops.workspace_dir(session.pk)
    subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(work / "sub"), "status"],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert marker.exists()
    marker.unlink()


def test_a_symlink_to_a_host_file_is_committed_as_a_link_not_the_files_content(
    api, alice, repo_project, gitserver, sessions_made, tmp_path_factory
):
    """Host git reads the workspace: a symlink the sandbox made to a world-readable host file is pushed as
    a link (its target path), never with the host file's content."""
    secret = f"HOST-SECRET-{uuid.uuid4().hex}"
    host_dir = tmp_path_factory.mktemp("host-secret")
    host_dir.chmod(0o755)
    (host_dir / "secret.txt").write_text(secret + "\n")
    (host_dir / "secret.txt").chmod(0o644)  # world-readable: the sandbox uid could read it on the host
    repo_project(gitserver.url("public/demo.git"))
    _, box, url = session_over_api(api, alice, sessions_made)
    assert box.exec(f"ln -s {host_dir}/secret.txt static-link && ln -s {host_dir} dir-link").exit_code == 0
    pushed = operation_over_api(api, alice, url, "push", {"message": "links"})
    assert pushed.status == "done", pushed.error
    commit, repo = pushed.result["commit"], str(gitserver.root / "public/demo.git")
    found = subprocess.run(["git", "--git-dir", repo, "grep", "-l", secret, commit], capture_output=True)
    assert found.returncode == 1 and found.stdout == b""  # nothing matched
    assert gitserver.show("public/demo.git", commit, "static-link") == f"{host_dir}/secret.txt"
    assert gitserver.show("public/demo.git", commit, "dir-link") == str(host_dir)


@pytest.fixture
def world_readable_dir():
    """A host folder any uid can read (pytest's own tmp folders are root's alone, so a link into them
    would prove nothing)."""
    path = Path(tempfile.mkdtemp(prefix="hangar-host-secret-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# It races until the test writes race.stop, however long the commits take: with a fixed 40 s, a loaded
# machine's last commits found nothing changed (50 distinct commits of 150 in one CI run). The end is only
# a backstop should the test die before its `finally`.
RACER = r"""
import os, sys, time
target, names, n, end = sys.argv[1], [f"race{i}" for i in range(24)], 0, time.time() + 600
os.makedirs("tmp", exist_ok=True)  # its files are .gitignore'd: git lists only the race files
while time.time() < end and not os.path.exists("race.stop"):
    for name in names:  # all regular files (half of the time)...
        n += 1
        with open(f"tmp/{name}.f", "w") as f:
            f.write("x" * (n % 97 + 1))
        os.replace(f"tmp/{name}.f", name)
    for name in names:  # ...then all links
        if os.path.lexists(f"tmp/{name}.l"):
            os.unlink(f"tmp/{name}.l")
        os.symlink(target, f"tmp/{name}.l")
        os.replace(f"tmp/{name}.l", name)
"""


def test_a_file_swapped_for_a_symlink_while_git_reads_it_never_brings_in_a_host_file(
    api, alice, repo_project, gitserver, sessions_made, world_readable_dir
):
    """The race a static link cannot show: the sandbox swaps files for links to a host file while host git
    commits, so some file is a regular file at git's lstat and a link at its open. Git runs jailed (a
    mount namespace holding only the workspace and its git dir), so the link leads nowhere; on the host
    itself it would commit the host file's content (it did, before the jail: in the first few commits)."""
    secret = f"HOST-SECRET-{uuid.uuid4().hex}"
    host_dir = world_readable_dir
    (host_dir / "secret.txt").write_text(secret + "\n")
    repo_project(gitserver.url("public/demo.git"))
    session, box, _ = session_over_api(api, alice, sessions_made)
    box.write("/workspace/racer.py", RACER)
    box.write("/workspace/.gitignore", "tmp/\nrace.stop\n")
    racing = box.exec(f"(python3 racer.py {host_dir}/secret.txt >/dev/null 2>&1 &) ; sleep 0.5; ls race0")
    assert racing.exit_code == 0, racing.output
    commits, lost_races = [], 0
    try:
        for i in range(60):  # unjailed, the host file came in within the first few commits
            try:
                commits.append(gitops.commit_all(str(session.pk), f"race {i}", "Racer", "r@example.com"))
            except gitops.GitError as exc:
                # A file that became a link between git's lstat and its open (or the reverse) cannot be
                # indexed: jailed, the link's target is not there. The sandbox only spoils its own commit.
                assert "unable to index file" in str(exc), exc
                lost_races += 1
    finally:
        box.write("/workspace/race.stop", "")
    assert len({c for c in commits if c}) > 20, lost_races  # the racer changed files under the commits
    history = subprocess.run(
        ["git", "--git-dir", str(gitops.session_gitdir(str(session.pk))), "log", "-p", "--format=%H", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # Git reads as many bytes as lstat reported, so a leak is the host file's first bytes: none at all.
    assert "race0" in history and "HOST-SECRET" not in history
