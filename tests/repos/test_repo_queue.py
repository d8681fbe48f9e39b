"""Repository work (clone, setup script, push, pull) runs on a Celery queue of its own, so a slow clone
never takes an agent step's worker thread, and holds no database connection (nor a lock on one) while
git or the setup script runs: the web tier and the runs share that pool."""

import threading

import pytest
from django.db import connection

from hangar.engine import workspace_tasks
from hangar.repos.models import SessionWorkspace, WorkspaceOperation
from sandbox import gitops
from tests.engine.conftest import REPO_QUEUE, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def _create(api, alice, sessions_made) -> str:
    base = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/"
    response = api(alice).post(base, {"title": "t"}, format="json")
    assert response.status_code == 201, response.content
    sessions_made.append(response.json()["id"])
    return response.json()["id"]


def test_workspace_preparation_and_pushes_run_on_the_repository_queue(
    api, alice, repo_project, gitserver, start_worker, sessions_made
):
    repo_project(gitserver.url("public/demo.git"), setup="echo prepared")
    # This worker consumes the repository queue only: what it does was sent there.
    start_worker(env={"HANGAR_REPO_ALLOW_PRIVATE_HOSTS": "1"}, queues=[REPO_QUEUE])
    session_id = _create(api, alice, sessions_made)

    def ready():
        return SessionWorkspace.objects.filter(session_id=session_id, state="ready").first()

    row = wait_for(ready, timeout=90, what="the workspace prepared by the repository queue's worker")
    assert row.setup_exit_code == 0 and "prepared" in row.setup_log
    url = f"/api/orgs/{alice.org.slug}/projects/{alice.project.pk}/sessions/{session_id}/workspace/"
    (gitops.workspace_dir(session_id) / "pushed.txt").write_text("x\n")
    response = api(alice).post(url + "push/", {"message": "from the queue"}, format="json")
    assert response.status_code == 202, response.content
    operation = response.json()["operation"]["id"]

    def done():
        return WorkspaceOperation.objects.filter(pk=operation, status="done").first()

    assert wait_for(done, timeout=90, what="the push run by the repository queue's worker")


def _others() -> tuple[int, int]:
    """(connections to this database besides this one, advisory locks held)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        connections = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'")
        return connections, cursor.fetchone()[0]


def _started(session_id: str) -> bool:
    try:
        return (gitops.workspace_dir(session_id) / ".started").exists()
    except gitops.GitError:
        return False  # no volume yet


def test_preparing_a_workspace_holds_no_database_connection_while_the_setup_script_runs(
    api, alice, repo_project, gitserver, sessions_made
):
    # The script waits for the test's word: while it waits, the preparation is mid-way.
    setup = "touch .started; while [ ! -e .go ]; do sleep 0.1; done; echo finished"
    repo_project(gitserver.url("public/demo.git"), setup=setup)
    session_id = _create(api, alice, sessions_made)  # its task goes to the queue; no worker here
    before = _others()
    thread = threading.Thread(target=workspace_tasks.prepare_workspace, args=[session_id], daemon=True)
    thread.start()
    try:
        wait_for(lambda: _started(session_id), timeout=120, what="the setup script started")
        during = _others()
    finally:
        (gitops.workspace_dir(session_id) / ".go").write_text("")
        thread.join(timeout=120)
    assert during == before  # no connection and no advisory lock held while the script runs
    row = SessionWorkspace.objects.get(session_id=session_id)
    assert row.state == "ready" and "finished" in row.setup_log
