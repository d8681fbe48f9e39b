"""Cached environments (issue 28 item 5): what the setup script left in a workspace is kept as a layer keyed
by the project, the repository commit, the script, the image and the script's env; the next session on the
same key starts from it without running the script, sessions on it never see each other's writes, a new
commit or a changed script runs the script again, the layer counts in the org's disk and is pruned by bytes
once nothing stands on it."""

import pytest

from hangar.conversations.services import session_create
from hangar.engine.workspace.env_cache import environments_of
from hangar.engine.workspace.prepare import RESTORED
from hangar.engine.workspace.sandboxes import manager, sandbox_for
from hangar.repos.models import SessionWorkspace
from sandbox import env_cache, gitops, repo_disk
from sandbox.gitops.layers import remove_layer

pytestmark = [pytest.mark.timeout(300), pytest.mark.django_db(transaction=True)]

# $RANDOM: a second run would leave another number, so equal files prove the script did not run again.
SETUP = """set -e
echo "setup ran"
echo $RANDOM$RANDOM > built.txt
mkdir -p node_modules/dep && echo 'module.exports = 1' > node_modules/dep/index.js
echo changed by setup >> README.md
"""


@pytest.fixture(autouse=True)
def _no_environments_of_an_earlier_run(alice):
    """Layers live on the host, beyond the test database: an earlier run's org and project ids may match."""
    for kept in environments_of(alice.org.pk):
        assert remove_layer(env_cache.layer_path(kept["key"]))


def _session(persona, made):
    session = session_create(actor=persona.actor, project=persona.project, title="t")
    made.append(session.pk)
    return session


def _row(session):
    return SessionWorkspace.objects.get(session=session)


def test_the_next_session_on_the_same_commit_starts_from_the_kept_environment(
    alice, repo_project, gitserver, sessions_made
):
    gitserver.create("public/envcache.git", {"README.md": "# env\n", "src/app.py": "print(1)\n"})
    project = repo_project(gitserver.url("public/envcache.git"), setup=SETUP)
    first = _session(alice, sessions_made)
    a = sandbox_for(first)
    assert "setup ran" in _row(first).setup_log
    built = a.read("built.txt").content
    (kept,) = environments_of(alice.org.pk, project.pk)
    assert kept["commit"] == _row(first).base_commit and kept["bytes"] > 0 and kept["files"] >= 4
    assert repo_disk.used_bytes(str(alice.org.pk)) >= kept["bytes"]
    layer = env_cache.layer_path(kept["key"])

    second = _session(alice, sessions_made)
    b = sandbox_for(second)
    assert _row(second).setup_log == RESTORED and _row(second).setup_exit_code == 0
    assert b.read("built.txt").content == built
    assert b.read("node_modules/dep/index.js").content == "module.exports = 1"
    # git sees the setup's changes as the first session does: README modified, the rest untracked.
    status = b.exec("cat README.md").output
    assert "changed by setup" in status
    head = gitops.git("--git-dir", str(gitops.session_gitdir(second.pk)), "rev-parse", "HEAD").stdout.strip()
    assert head == _row(first).base_commit
    changes = {f["path"]: f["status"] for f in gitops.diff_base(second.pk, 100_000)["files"]}
    assert changes == {"README.md": "modified", "built.txt": "added", "node_modules/dep/index.js": "added"}
    assert changes == {f["path"]: f["status"] for f in gitops.diff_base(first.pk, 100_000)["files"]}

    # Writes stay each session's own; the kept layer never changes.
    assert b.exec("echo mine > built.txt && rm -r node_modules").exit_code == 0
    third = _session(alice, sessions_made)
    c = sandbox_for(third)
    assert c.read("built.txt").content == built and c.stat("node_modules/dep/index.js") is not None
    assert (layer / "tree" / "built.txt").read_text().strip() == built
    assert not (layer / "tree" / "node_modules" / "dep" / "index.js").stat().st_mode & 0o6000


def test_a_new_commit_or_a_changed_script_runs_the_script_again(
    alice, repo_project, gitserver, sessions_made
):
    gitserver.create("public/envcache2.git", {"README.md": "# env\n"})
    url = gitserver.url("public/envcache2.git")
    project = repo_project(url, setup=SETUP)
    first = _session(alice, sessions_made)
    sandbox_for(first)
    gitserver.advance("public/envcache2.git", "main", "README.md", "# env v2\n")
    moved = _session(alice, sessions_made)
    sandbox_for(moved)
    assert "setup ran" in _row(moved).setup_log and _row(moved).base_commit != _row(first).base_commit
    project.setup_script = SETUP + "echo again\n"
    project.save()
    changed = _session(alice, sessions_made)
    sandbox_for(changed)
    assert "again" in _row(changed).setup_log
    assert len(environments_of(alice.org.pk, project.pk)) == 3


def test_a_project_without_a_repository_keeps_its_environment_too_and_it_is_pruned_by_bytes(
    alice, allow_private, sessions_made
):
    project = alice.project
    project.setup_script = "echo $RANDOM$RANDOM > tool.bin; echo setup ran"
    project.save()
    first = _session(alice, sessions_made)
    made = sandbox_for(first).read("tool.bin").content
    second = _session(alice, sessions_made)
    assert sandbox_for(second).read("tool.bin").content == made
    assert _row(second).setup_log == RESTORED
    (kept,) = environments_of(alice.org.pk, project.pk)
    # In use: never pruned, whatever the byte limit.
    assert f"env-{kept['key']}" not in gitops.prune_layers(keep=8, keep_bytes=0)
    for session_id in list(sessions_made):
        manager().destroy(session_id)
    sessions_made.clear()
    assert f"env-{kept['key']}" in gitops.prune_layers(keep=8, keep_bytes=0)
    assert environments_of(alice.org.pk, project.pk) == []
    third = _session(alice, sessions_made)
    sandbox_for(third)
    assert "setup ran" in _row(third).setup_log


def test_the_api_lists_a_projects_environments_to_members_and_an_admin_removes_one(
    api, alice, bob, charlie, allow_private, sessions_made
):
    project = alice.project
    project.setup_script = "head -c 300000 /dev/urandom > blob.bin; echo setup ran"
    project.save()
    sandbox_for(_session(alice, sessions_made))
    url = f"/api/orgs/acme/projects/{project.pk}/environments/"
    listed = api(bob).get(url)
    assert listed.status_code == 200, listed.content
    (kept,) = listed.json()
    assert kept["bytes"] >= 300_000 and kept["files"] == 1 and kept["commit"] == "" and kept["image"]
    assert set(kept) == {
        "key",
        "repo_url",
        "commit",
        "image",
        "script",
        "bytes",
        "files",
        "created",
        "last_used",
    }
    foreign = f"/api/orgs/{charlie.org.slug}/projects/{project.pk}/environments/"
    assert api(charlie).get(url).status_code == 404 and api(charlie).get(foreign).status_code == 404
    assert api(charlie).delete(url + kept["key"]).status_code == 404
    assert api(bob).delete(url + kept["key"]).status_code == 403
    sandbox_for(_session(alice, sessions_made))  # the next session stands on it
    assert api(alice).delete(url + kept["key"]).status_code == 409
    assert api(alice).delete(url + "0" * 40).status_code == 404
    for session_id in list(sessions_made):
        manager().destroy(session_id)
    sessions_made.clear()
    assert api(alice).delete(url + kept["key"]).status_code == 204
    assert api(alice).get(url).json() == []
