"""A repository session whose host was lost is prepared again on another host from the session's branch as
last pushed (hangar.engine.workspace.prepare, docs/scale-out.md "Host loss"): what it pushed is there,
what it wrote after is not, and the notice says which checkpoint. The other host is played by this one
once the session's host files are gone (sandbox destroyed: volume, registry, host git dir, ready marker);
its rows in Postgres (the workspace's base commit, the push) are kept, as when a host is lost.
"""

from __future__ import annotations

import pytest

from hangar.engine.workspace.host_resume import checkpoint_of
from hangar.engine.workspace.sandboxes import manager, sandbox_for
from hangar.repos.models import SessionWorkspace
from sandbox import gitops
from tests.repos.conftest import TOKEN, operation_over_api, session_over_api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def test_a_lost_hosts_repository_session_resumes_from_its_pushed_branch(
    api, alice, repo_project, gitserver, sessions_made
):
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice")
    session, box, url = session_over_api(api, alice, sessions_made)
    row = SessionWorkspace.objects.get(session=session)
    base = row.base_commit
    assert checkpoint_of(session) == "a new checkout of the project's repository at main (nothing pushed)"

    box.write("/workspace/change.txt", "pushed\n")
    pushed = operation_over_api(api, alice, url, "push", {"message": "change"})
    assert pushed.status == "done", pushed.error
    commit = gitserver.head("private/app.git", row.branch)
    box.write("/workspace/after.txt", "not pushed\n")

    manager().destroy(session.pk)  # the host's files are gone
    assert not gitops.ready_marker(session.pk).exists()
    again = sandbox_for(session)
    assert again.read("change.txt").content == "pushed"
    assert again.exec("ls after.txt 2>/dev/null || echo gone").output.strip() == "gone"
    assert gitops.current_branch(session.pk) == row.branch
    row.refresh_from_db()
    assert row.state == "ready" and row.base_commit == base  # the diff's base stays the session's start
    assert checkpoint_of(session) == f"the session's branch {row.branch} as last pushed ({commit[:12]})"
