# ruff: noqa: F811  (the fixtures imported below are the parameters of the test)
"""The session's repository in the web app: the Changes view shows the branch, commits and pushes what
the session changed (a worker runs the push against a real git smart-HTTP server), and says so."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from hangar.conversations.models import Session
from hangar.engine.workspace.sandboxes import sandbox_for
from hangar.projects import crypto
from hangar.projects.models import Project
from sandbox import gitssh
from tests.engine.conftest import start_worker  # noqa: F401  (fixture)
from tests.opencode.live import Daphne
from tests.repos.conftest import (  # noqa: F401  (fixtures)
    TOKEN,
    allow_private,
    gitserver,
    repo_project,
    sshserver,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def daphne(django_db_setup, django_db_blocker):
    """The web server of this module's tests lets projects point at the local git servers."""
    server = Daphne(settings.DATABASES["default"]["NAME"], env={"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1"})
    yield server
    server.stop()


def test_a_member_commits_and_pushes_the_sessions_branch_from_the_changes_view(
    api,
    alice,
    open_app,
    repo_project,
    gitserver,
    start_worker,
    sessions_made,
):
    repo_project(gitserver.url("private/app.git"), token=TOKEN, username="alice")
    start_worker(env={"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1", "HANGAR_SANDBOX_POOL": "0"})
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    created = api(alice).post(base, {"title": "web push", "branch": "feature/web"}, format="json")
    assert created.status_code == 201, created.content
    session = Session.objects.get(pk=created.json()["id"])
    sessions_made.append(session.pk)
    sandbox_for(session).write("/workspace/FROM_THE_WEB.md", "pushed from the browser\n")

    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}/changes")
    panel = page.get_by_role("region", name="Repository")
    panel.get_by_text("feature/web").wait_for()
    assert panel.get_by_test_id("workspace-state").inner_text() == "ready"
    push = panel.get_by_role("button", name="Commit and push")
    assert push.is_disabled()  # no message yet
    panel.get_by_label("Commit message").fill("Add a note from the web")
    push.click()
    status = panel.get_by_test_id("repo-operation")
    page.locator('[data-testid=repo-operation][data-status="done"]').wait_for(timeout=60_000)
    assert status.inner_text().startswith("Push done")
    app.shot("session-repository")

    head = gitserver.head("private/app.git", "feature/web")
    assert head and head[:12] in status.inner_text()
    assert gitserver.show("private/app.git", head, "FROM_THE_WEB.md") == "pushed from the browser\n"


def test_the_files_view_opens_directories_and_shows_a_file(api, alice, open_app, sessions_made):
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    created = api(alice).post(base, {"title": "browse"}, format="json")
    assert created.status_code == 201, created.content
    session = Session.objects.get(pk=created.json()["id"])
    sessions_made.append(session.pk)
    box = sandbox_for(session)
    box.write("/workspace/src/app.py", "print('from the tree')\n")
    box.write("/workspace/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")

    app = open_app(alice)
    page = app.page
    page.goto(f"/o/acme/p/{alice.project.pk}/s/{session.pk}/files")
    tree = page.get_by_role("tree", name="Files")
    tree.get_by_role("button", name="▸ src").click()
    tree.get_by_role("button", name="app.py").click()
    page.get_by_test_id("file-content").filter(has_text="print('from the tree')").wait_for()
    tree.get_by_role("button", name="logo.png").click()
    page.get_by_text("Binary file: not shown.").wait_for()
    tree.get_by_role("button", name="app.py").click()
    page.get_by_test_id("file-content").wait_for()
    app.shot("session-files")


def test_an_admin_points_a_project_at_an_ssh_repository_and_makes_its_deploy_key(
    alice, open_app, allow_private, sshserver
):
    app = open_app(alice)
    page = app.page
    page.goto("/o/acme/console/repositories")
    form = page.get_by_role("form", name="Project repository")
    form.get_by_label("Repository URL").fill("ssh://git@-x/repo.git")
    form.get_by_role("button", name="Save repository").click()
    expect(form.get_by_role("alert")).to_contain_text("An SSH URL is")

    form.get_by_label("Repository URL").fill(sshserver.url("public/demo.git"))
    form.get_by_label("Default branch").fill("main")
    form.get_by_role("button", name="Save repository").click()
    page.get_by_text("Repository saved.").wait_for()
    # The host key was read from the host and pinned; its fingerprint is shown.
    project = Project.objects.get(pk=alice.project.pk)
    assert project.repo_ssh_host_key == sshserver.host_key
    expect(page.get_by_label("Host key fingerprint")).to_have_text(gitssh.fingerprint(sshserver.host_key))

    form.get_by_role("button", name="Generate a deploy key").click()
    page.get_by_text("A new deploy key was made").wait_for()
    project.refresh_from_db()
    assert project.repo_ssh_public_key.startswith("ssh-ed25519 ") and project.repo_ssh_key_encrypted
    expect(page.get_by_label("Deploy public key")).to_have_value(project.repo_ssh_public_key)
    private = crypto.decrypt(project.repo_ssh_key_encrypted)
    assert private.splitlines()[1] not in page.content()  # the private key never reaches the browser
    app.shot("console-repositories")
