"""The session's repository changes against its base commit: per-file counts and the unified patch of the
workspace as it is now (untracked files included), bounded; tenant-scoped."""

import pytest

from sandbox import gitops
from tests.api.schema_check import assert_conforms
from tests.repos.conftest import session_over_api

pytestmark = pytest.mark.timeout(240)


def test_the_diff_against_the_base_commit_counts_lines_and_carries_the_patch(
    api, alice, repo_project, gitserver, sessions_made, settings
):
    repo_project(gitserver.url("public/demo.git"))
    session, box, url = session_over_api(api, alice, sessions_made)
    url += "diff/"
    unchanged = assert_conforms(api(alice).get(url), "workspace_diff")  # the declared shape, exactly
    assert unchanged["files"] == [] and unchanged["patch"] == ""  # nothing changed yet
    edit = "printf 'print(1)\\nprint(2)\\n' > src/app.py && rm setup.sh && printf 'a\\nb\\nc\\n' > NEW.md"
    assert box.exec(edit).exit_code == 0
    body = assert_conforms(api(alice).get(url), "workspace_diff")
    assert body["base_commit"] == gitserver.head("public/demo.git", "main") and not body["truncated"]
    files = {f["path"]: f for f in body["files"]}
    assert files["src/app.py"] == {
        "path": "src/app.py",
        "status": "modified",
        "additions": 2,
        "deletions": 1,
        "binary": False,
    }
    assert files["NEW.md"]["status"] == "added" and files["NEW.md"]["additions"] == 3
    assert files["setup.sh"]["status"] == "deleted" and files["setup.sh"]["deletions"] == 2
    assert "+print(2)" in body["patch"] and "-print('hello')" in body["patch"]
    # The session's own index is untouched (the next commit stages for itself).
    status = gitops.git(
        "--git-dir", str(gitops.session_gitdir(session.pk)), "diff", "--cached", "--quiet", check=False
    )
    assert status.returncode == 0
    settings.HANGAR_WORKSPACE_DIFF_MAX_BYTES = 100
    cut = api(alice).get(url).json()
    assert cut["truncated"] and len(cut["patch"].encode()) <= 100 and len(cut["files"]) == 3


def test_the_diff_is_404_for_another_org(api, alice, charlie, repo_project, gitserver, sessions_made):
    repo_project(gitserver.url("public/demo.git"))
    session, _, url = session_over_api(api, alice, sessions_made)
    url += "diff/"
    assert api(charlie).get(url).status_code == 404
    other = f"/api/orgs/globex/projects/{alice.project.pk}/sessions/{session.pk}/workspace/diff/"
    assert api(charlie).get(other).status_code == 404
