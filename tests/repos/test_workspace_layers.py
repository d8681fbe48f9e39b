"""A workspace stands on its commit's shared read-only tree (an overlay): sessions on the same commit share
the tree and never see each other's writes, the tree never changes, a warm-pool container (started
before the overlay existed) sees it, hibernate/resume keeps the session's changes, destroy drops the
session's reference and an unused tree is pruned; a repository larger than the quota is refused with
nothing written."""

import os

import pytest

from hangar.conversations.services import session_create
from hangar.engine.workspace import sandboxes
from hangar.engine.workspace.prepare import WorkspaceError
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.repos.models import SessionWorkspace
from sandbox import DockerSandboxes, WarmPool, gitops, registry, volumes

pytestmark = pytest.mark.timeout(240)


def _session(persona, made):
    session = session_create(actor=persona.actor, project=persona.project, title="t")
    made.append(session.pk)
    return session


def _layer(session) -> "os.PathLike[str]":
    row = SessionWorkspace.objects.get(session=session)
    mirror = gitops.mirror_path(str(session.org_id), row.repo_url)
    return gitops.layer_path(mirror, row.base_commit)


def test_sessions_on_one_commit_share_its_tree_and_never_see_each_others_writes(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    first, second = _session(alice, sessions_made), _session(alice, sessions_made)
    a, b = sandbox_for(first), sandbox_for(second)
    layer = _layer(first)
    assert layer == _layer(second) and sorted(p.name for p in (layer / "users").iterdir()) == sorted(
        registry.lookup(volumes.session_key(s.pk))["volume"] for s in (first, second)
    )
    edit = a.exec(
        "echo changed > README.md && rm src/app.py && mkdir -p new && echo n > new/f && mv src moved"
    )
    assert edit.exit_code == 0, edit.output
    assert a.exec("cat README.md; ls src moved new 2>&1").output.split()[0] == "changed"
    # The other session and the shared tree are untouched.
    assert b.read("README.md").content == "# demo"
    assert b.read("src/app.py").content == "print('hello')"
    assert b.stat("new/f") is None and b.stat("moved") is None
    assert (layer / "tree" / "README.md").read_text() == "# demo\n"
    assert (layer / "tree" / "src" / "app.py").exists()
    # The session's files are the sandbox user's and writable by it, including copied-up ones.
    owners = a.exec("stat -c '%u' README.md moved new/f; touch README.md setup.sh && echo ok").output.split()
    assert owners == ["1000", "1000", "1000", "ok"]
    # Host git sees the session's changes through the same overlay.
    status = gitops.git(
        "--git-dir",
        str(gitops.session_gitdir(first.pk)),
        "--work-tree",
        str(gitops.workspace_dir(first.pk)),
        "status",
        "--porcelain",
        as_sandbox_user=True,
    ).stdout
    assert " M README.md" in status and " D src/app.py" in status and "?? new/" in status
    clean = gitops.git(
        "--git-dir",
        str(gitops.session_gitdir(second.pk)),
        "--work-tree",
        str(gitops.workspace_dir(second.pk)),
        "status",
        "--porcelain",
        as_sandbox_user=True,
    ).stdout
    assert clean == ""


def test_a_warm_pool_sandbox_sees_its_overlay_and_hibernate_resume_keeps_the_changes(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    pool = WarmPool(1, template=sandboxes._pool_template(), extra_labels={"hangar.test": "layers"})
    pooled = DockerSandboxes(pool=pool, image=pool.image, extra_labels={"hangar.test": "layers"})
    previous, sandboxes._manager = sandboxes._manager, pooled
    try:
        pool.fill()
        session = _session(alice, sessions_made)
        box = sandbox_for(session)
        assert box.exec("cat README.md").output.strip() == "# demo"  # claimed: the pool's container
        assert box.exec("echo mine > mine.txt").exit_code == 0
        pooled.hibernate(session.pk)
        volume = registry.lookup(volumes.session_key(session.pk))["volume"]
        assert not os.path.ismount(volumes.mount_point(volume) / "workspace")
        box = sandbox_for(session)
        assert box.exec("cat mine.txt README.md").output.split() == ["mine", "#", "demo"]
        layer = _layer(session)
        pooled.destroy(session.pk)
        assert not (layer / "users" / volume).exists()
        assert layer.name in gitops.prune_layers(keep=0) or not layer.exists()
        assert not layer.exists()
    finally:
        sandboxes._manager = previous
        pool.drain()


def test_a_repository_larger_than_the_disk_quota_is_refused_and_nothing_is_written(
    alice, repo_project, gitserver, sessions_made
):
    if not (gitserver.root / "public/huge.git").exists():
        gitserver.create("public/huge.git", {"small.txt": "s\n", "big.bin": bytes(300 * 2**20)})
    project = repo_project(gitserver.url("public/huge.git"))
    project.sandbox_disk_mb = 256
    project.save()
    session = _session(alice, sessions_made)
    with pytest.raises(WorkspaceError, match="does not fit in the session's disk quota"):
        sandbox_for(session)
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "failed" and row.error["kind"] == "quota"
    assert "does not fit" in row.error["message"]
    sha = gitserver.head("public/huge.git", "main")
    assert not [p for p in gitops.layers_dir().iterdir() if sha in p.name and not p.name.endswith(".lock")]
    volume = registry.lookup(volumes.session_key(session.pk))["volume"]
    workspace = volumes.mount_point(volume) / "workspace"
    assert not os.path.ismount(workspace) and os.listdir(workspace) == []
    assert not gitops.session_gitdir(session.pk).exists()
