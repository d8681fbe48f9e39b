"""Repositories on the host disk (sandbox.repo_disk): a clone or fetch stops at its size limit with a clear
error and keeps nothing, mirrors and checkout layers count against the org and global disk budgets,
mirrors nobody uses and layers beyond their byte budget are pruned, and health shows the space."""

import math
import os
import time
import uuid

import pytest

from hangar.conversations.models import Session
from hangar.engine.workspace.sandboxes import sandbox_for
from sandbox import budget, gitops, repo_disk
from sandbox.gitops.layers import _build_layer
from sandbox.protocol import QuotaExceeded

pytestmark = pytest.mark.timeout(240)


def _random_text(mb: int) -> str:
    """Text that does not compress much (hex of random bytes, about half its size once packed)."""
    return os.urandom(mb * 2**20 // 2).hex()


@pytest.fixture
def big_repo(gitserver):
    name = f"public/big-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# big\n", "blob.txt": _random_text(6)})
    return name


def _remote(gitserver, name):
    return gitops.check_url(gitserver.url(name), allow_private=True)


def test_a_clone_larger_than_the_repository_size_limit_stops_with_a_clear_error(
    gitserver, big_repo, monkeypatch, db
):
    monkeypatch.setenv("HANGAR_REPO_MAX_MB", "1")
    scope = f"org-{uuid.uuid4().hex[:8]}"
    with pytest.raises(gitops.GitError) as caught:
        gitops.mirror_sync(_remote(gitserver, big_repo), scope)
    assert caught.value.kind == "quota"
    assert "larger than the 1 MB" in str(caught.value)
    path = gitops.mirror_path(scope, gitserver.url(big_repo))
    assert not path.exists()
    assert not [p for p in gitops.mirrors_dir().iterdir() if p.name.startswith(f".{path.name}.")]


def test_a_fetch_that_would_grow_a_mirror_past_the_limit_stops_and_keeps_the_mirror(
    gitserver, monkeypatch, db
):
    name = f"public/grow-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# small\n"})
    scope = f"org-{uuid.uuid4().hex[:8]}"
    mirror = gitops.mirror_sync(_remote(gitserver, name), scope)
    before = gitops.resolve_ref(mirror, "main")
    gitserver.advance(name, "main", "blob.txt", _random_text(6))
    monkeypatch.setenv("HANGAR_REPO_MAX_MB", "2")
    with pytest.raises(gitops.GitError) as caught:
        gitops.mirror_sync(_remote(gitserver, name), scope)
    assert caught.value.kind == "quota" and "HANGAR_REPO_MAX_MB" in str(caught.value)
    assert gitops.resolve_ref(mirror, "main") == before
    assert not list((mirror / "objects" / "pack").glob("tmp_*"))
    monkeypatch.setenv("HANGAR_REPO_MAX_MB", "64")
    gitops.mirror_sync(_remote(gitserver, name), scope)  # with room, the same fetch goes through
    assert gitops.resolve_ref(mirror, "main") == gitserver.head(name, "main")


def test_mirrors_and_layers_count_against_the_org_disk_budget(
    api, alice, repo_project, gitserver, big_repo, sessions_made, monkeypatch
):
    repo_project(gitserver.url(big_repo))
    base = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/"
    response = api(alice).post(base, {"title": "t"}, format="json")
    assert response.status_code == 201, response.content
    sessions_made.append(response.json()["id"])
    sandbox_for(Session.objects.get(pk=response.json()["id"]))  # mirror fetched, layer checked out
    org = str(alice.org.pk)
    repos = repo_disk.used_mb(org)
    assert repos >= 6  # the mirror's pack and the layer's tree, ~3 MB each at least
    volumes_mb = budget.org_written_mb(org)
    # Room for one more 1 MB workspace if repositories were free; they are not.
    limits = budget.Limits(org_mb=math.ceil(volumes_mb) + 1 + math.floor(repos / 2))
    with pytest.raises(QuotaExceeded, match="by repositories"):
        budget.check_org(1, org, limits)
    with pytest.raises(QuotaExceeded, match="by repositories"):
        budget.check(1, org_id=org, limits=budget.Limits(global_mb=math.ceil(budget.usage().written_mb) + 1))
    # An org whose budget the repositories already fill fetches nothing more.
    monkeypatch.setenv("HANGAR_SANDBOX_ORG_DISK_BUDGET_MB", str(math.floor(volumes_mb + repos)))
    with pytest.raises(gitops.GitError) as caught:
        gitops.mirror_sync(_remote(gitserver, big_repo), org)
    assert caught.value.kind == "quota" and "disk budget" in str(caught.value)


def test_mirrors_nobody_used_and_layers_beyond_their_byte_budget_are_pruned(
    api, alice, repo_project, gitserver, sessions_made, db
):
    name = f"public/prune-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# one\n"})
    second = gitserver.advance(name, "main", "two.txt", "two\n")
    idle = gitops.mirror_sync(_remote(gitserver, name), f"org-{uuid.uuid4().hex[:8]}")
    for sha in (gitops.resolve_ref(idle, "main"), gitops.resolve_ref(idle, "main~1")):
        layer = gitops.layer_path(idle, sha)
        _build_layer(idle, sha, layer, gitops.tree_size(idle, sha))
    layers = sorted(gitops.layers_dir().glob(f"{idle.stem}-*"))
    assert len(layers) == 2 and second in "".join(p.name for p in layers)
    # By bytes: with room for both they stay, with room for none they go (least recently used first).
    assert not set(gitops.prune_layers(keep=100, keep_bytes=2**40)) & {p.name for p in layers}
    assert {p.name for p in layers} <= set(gitops.prune_layers(keep=100, keep_bytes=1))
    assert not any(p.exists() for p in layers)

    # A mirror a session borrows from stays, however old; an idle one nobody borrows goes.
    repo_project(gitserver.url("public/demo.git"))
    base = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/"
    response = api(alice).post(base, {"title": "t"}, format="json")
    sessions_made.append(response.json()["id"])
    sandbox_for(Session.objects.get(pk=response.json()["id"]))
    borrowed = gitops.mirror_path(str(alice.org.pk), gitserver.url("public/demo.git"))
    long_ago = time.time() - 30 * 86400
    for mirror in (idle, borrowed):
        os.utime(mirror.with_suffix(".org"), (long_ago, long_ago))
    removed = gitops.prune_mirrors(idle_s=7 * 86400)
    assert idle.name in removed and not idle.exists() and not idle.with_suffix(".org").exists()
    assert borrowed.name not in removed and borrowed.exists()


def test_health_shows_free_space_and_what_repositories_take(api, alice):
    response = api(alice).get("/api/health")
    detail = response.json()["checks"]["sandbox_disk"]["detail"]
    assert "MB free" in detail and "MB in repositories" in detail
