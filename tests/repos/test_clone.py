"""A new session's workspace is a clone of the project's repository on a branch of its own, made by
host-side git from a per-org mirror; the sandbox sees the files only."""

import os
import shutil
import subprocess

import pytest

from hangar.conversations.models import Event
from hangar.conversations.services import session_create
from hangar.engine.workspace.prepare import WorkspaceError, remote_for
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.repos.models import SessionWorkspace
from hangar.repos.services import workspace_request
from sandbox import gitops
from tests.repos.conftest import TOKEN

pytestmark = pytest.mark.timeout(180)


def _session(persona, made, **request):
    session = session_create(actor=persona.actor, project=persona.project, title="t")
    made.append(session.pk)
    if request:
        workspace_request(actor=persona.actor, session=session, **request)
    return session


def test_a_public_repository_is_cloned_into_the_workspace_on_the_sessions_own_branch(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    session = _session(alice, sessions_made)
    box = sandbox_for(session)
    assert box.read("README.md").content == "# demo"
    assert box.read("src/app.py").content == "print('hello')"
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "ready" and row.ref == "main"
    assert row.base_commit == gitserver.head("public/demo.git", "main")
    assert row.branch == f"hangar/{session.pk[-12:]}" == gitops.current_branch(session.pk)
    # Files belong to the sandbox user; there is no .git (and no remote) inside the sandbox.
    listing = box.exec("stat -c '%u' README.md src/app.py; ls -a").output.split()
    assert listing[:2] == ["1000", "1000"] and ".git" not in listing
    types = [e.type for e in Event.objects.filter(session=session).order_by("seq")]
    assert "workspace.updated" in types


def test_a_private_repository_is_cloned_with_the_projects_token(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice")
    session = _session(alice, sessions_made)
    assert sandbox_for(session).read("SECRET_PROJECT.md").content == "private"


def test_a_wrong_token_fails_the_workspace_with_a_clear_error(alice, repo_project, gitserver, sessions_made):
    repo_project(gitserver.url("private/app.git"), token="wrong-token", username="alice")
    session = _session(alice, sessions_made)
    with pytest.raises(WorkspaceError, match="refused the credential"):
        sandbox_for(session)
    row = SessionWorkspace.objects.get(session=session)
    assert row.state == "failed" and row.error["kind"] == "auth"
    told = Event.objects.filter(session=session, type="workspace.updated").order_by("seq").last()
    assert "refused the credential" in told.payload["workspace"]["error"]["message"]
    with pytest.raises(WorkspaceError):  # sticky: the next call is told the same without retrying git
        sandbox_for(session)


def test_a_branch_tag_or_commit_named_at_creation_is_checked_out(
    alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("public/demo.git"))
    first = gitserver.head("public/demo.git", "main")
    gitserver.advance("public/demo.git", "main", "CHANGELOG.md", "v2\n")
    session = _session(alice, sessions_made, ref=first, branch="feature/from-old")
    box = sandbox_for(session)
    assert box.stat("CHANGELOG.md") is None
    row = SessionWorkspace.objects.get(session=session)
    assert row.base_commit == first and row.branch == "feature/from-old"
    latest = _session(alice, sessions_made)
    assert sandbox_for(latest).read("CHANGELOG.md").content == "v2"  # the mirror was fetched


def test_an_unknown_ref_fails_with_its_name(alice, repo_project, gitserver, sessions_made):
    repo_project(gitserver.url("public/demo.git"))
    session = _session(alice, sessions_made, ref="no-such-branch")
    with pytest.raises(WorkspaceError, match="no-such-branch"):
        sandbox_for(session)


def test_mirrors_are_kept_per_org(alice, charlie, repo_project, gitserver):
    url = gitserver.url("private/app.git")
    assert gitops.mirror_path(str(alice.org.pk), url) != gitops.mirror_path(str(charlie.org.pk), url)


@pytest.fixture
def umask_077():
    """The process umask deploy/up.sh used to hand its services (it keeps var/bootstrap.json private)."""
    old = os.umask(0o077)
    yield
    os.umask(old)


def test_a_repository_is_cloned_and_committed_while_the_process_umask_is_077(
    alice, repo_project, gitserver, sessions_made, umask_077
):
    """The worker may run under any umask: the jail and the workspace's git dirs are made with explicit
    modes (under 077 the jail's /dev was 0700 and every clone failed with "could not open '/dev/null'";
    then the mirror's objects, made by git under 077, were unreadable to the jailed checkout)."""
    repo_project(gitserver.url("public/demo.git"))
    session = _session(alice, sessions_made)
    box = sandbox_for(session)
    assert box.read("README.md").content == "# demo"
    box.write("notes.md", "written under umask 077\n")
    sha = gitops.commit_all(session.pk, "notes", "Alice", "alice@example.test")
    assert sha and sha == gitops.head(session.pk)
    row = SessionWorkspace.objects.get(session=session)
    gitops.push(session.pk, remote_for(session.project), row.branch)
    assert gitserver.head("public/demo.git", row.branch) == sha
    assert gitserver.show("public/demo.git", sha, "notes.md") == "written under umask 077\n"


def test_a_mirror_that_git_wrote_under_umask_077_is_made_readable_again(
    alice, repo_project, gitserver, sessions_made
):
    """A machine that ran the old deploy/up.sh holds mirrors readable by root only: the next clone
    repairs them instead of failing on "not a git repository"."""
    gitserver.create("public/umask.git", {"README.md": "# made before the fix\n"})  # a commit of its own
    project = repo_project(gitserver.url("public/umask.git"))
    mirror = gitops.mirror_path(str(alice.org.pk), project.repo_url)
    shutil.rmtree(mirror, ignore_errors=True)
    mirror.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["git", "clone", "--mirror", "--quiet", project.repo_url, str(mirror)], check=True, umask=0o077
    )
    assert (mirror / "objects").stat().st_mode & 0o077 == 0
    session = _session(alice, sessions_made)
    assert sandbox_for(session).read("README.md").content == "# made before the fix"
