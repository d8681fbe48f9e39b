"""Protected branches: the repository's default branch and the patterns an org admin lists
(`protected_branches`) take pushes from admins only. A member's session on such a branch is refused
(403, kind `protected`) when it asks to push, and again where the push runs; the remote is untouched."""

import uuid

import pytest

from hangar.conversations.models import Session
from hangar.engine import repo_ops
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.repos.models import WorkspaceOperation
from sandbox import gitops

pytestmark = pytest.mark.timeout(240)


def _session(api, persona, project, made, branch: str) -> tuple[str, str]:
    base = f"/api/orgs/{persona.org.slug}/projects/{project.pk}/sessions/"
    response = api(persona).post(base, {"title": "t", "branch": branch}, format="json")
    assert response.status_code == 201, response.content
    made.append(response.json()["id"])
    session = Session.objects.get(pk=response.json()["id"])
    sandbox_for(session)
    (gitops.workspace_dir(session.pk) / f"change-{uuid.uuid4().hex[:6]}.txt").write_text("x\n")
    return session.pk, base + f"{session.pk}/workspace/"


def _push(api, persona, url):
    return api(persona).post(url + "push/", {"message": "change"}, format="json")


def test_only_an_admin_pushes_to_the_default_branch_or_a_listed_pattern(
    api, alice, bob, repo_project, gitserver, sessions_made
):
    name = f"public/protected-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# p\n"})
    project = repo_project(gitserver.url(name))
    before = gitserver.head(name, "main")
    listed = api(alice).patch(
        f"/api/orgs/acme/projects/{project.pk}/", {"protected_branches": ["release/*"]}, format="json"
    )
    assert listed.status_code == 200 and listed.json()["protected_branches"] == ["release/*"]

    for branch in ("main", "release/1.0"):
        _, url = _session(api, bob, project, sessions_made, branch)
        refused = _push(api, bob, url)
        assert refused.status_code == 403, refused.content
        assert refused.json()["error"]["code"] == "protected" or "protected" in refused.content.decode()
    assert gitserver.head(name, "main") == before and not gitserver.head(name, "release/1.0")

    _, url = _session(api, bob, project, sessions_made, "feature/x")  # not protected: a member pushes
    assert _push(api, bob, url).status_code == 202
    _, url = _session(api, alice, project, sessions_made, "release/2.0")  # an admin may
    response = _push(api, alice, url)
    assert response.status_code == 202
    repo_ops.operation_run(response.json()["operation"]["id"])
    assert WorkspaceOperation.objects.get(pk=response.json()["operation"]["id"]).status == "done"
    assert gitserver.head(name, "release/2.0")


def test_a_push_asked_for_before_the_branch_was_protected_is_refused_where_it_runs(
    api, alice, bob, repo_project, gitserver, sessions_made
):
    name = f"public/protected-{uuid.uuid4().hex[:6]}.git"
    gitserver.create(name, {"README.md": "# p\n"})
    project = repo_project(gitserver.url(name))
    _, url = _session(api, bob, project, sessions_made, "hotfix/1")
    asked = _push(api, bob, url)
    assert asked.status_code == 202
    project.protected_branches = ["hotfix/*"]
    project.save()
    repo_ops.operation_run(asked.json()["operation"]["id"])
    op = WorkspaceOperation.objects.get(pk=asked.json()["operation"]["id"])
    assert op.status == "failed" and op.error["kind"] == "protected" and op.error["status"] == 403
    assert not gitserver.head(name, "hotfix/1")


def test_a_bad_protected_branch_pattern_is_a_400_naming_it(api, alice):
    url = f"/api/orgs/acme/projects/{alice.project.pk}/"
    for value in (["ok", ""], ["ok", "x" * 201], "main", ["ok", "a b"]):
        response = api(alice).patch(url, {"protected_branches": value}, format="json")
        assert response.status_code == 400, (value, response.content)
        assert any(f.startswith("protected_branches") for f in response.json()["error"]["fields"])
