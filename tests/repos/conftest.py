"""Repository tests: a real git smart-HTTP server on 127.0.0.1 (tests.repos.gitserver), the real Docker
sandbox, real Postgres. The server is on loopback, so these tests allow private repository hosts
explicitly (HANGAR_REPO_ALLOW_PRIVATE_HOSTS); one test shows the refusal without it."""

from __future__ import annotations

import os

import pytest

from tests.engine.conftest import (  # noqa: F401  (fixtures)
    make_session,
    module_workers,
    script,
    scripted,
    sessions_made,
    start_worker,
)
from tests.foundation_fixtures import _fresh_throttles, dave  # noqa: F401
from tests.repos.gitserver import GitServer
from tests.repos.sshserver import SSHServer

os.environ.setdefault("HANGAR_SANDBOX_POOL", "0")  # the pool test builds its own

# Via the environment: this module is imported twice (as a conftest and by tests), one token per run.
TOKEN = os.environ.setdefault("HANGAR_REPO_TEST_TOKEN", "ghp_s3cretT0kenForTests_" + os.urandom(6).hex())
FILES = {
    "README.md": "# demo\n",
    "src/app.py": "print('hello')\n",
    "setup.sh": "#!/bin/sh\necho setting up\n",
}


@pytest.fixture(scope="session")
def gitserver(tmp_path_factory):
    server = GitServer(tmp_path_factory.mktemp("gitserver"), users={"alice": TOKEN}).start()
    server.create("public/demo.git", FILES)
    server.create("private/app.git", {**FILES, "SECRET_PROJECT.md": "private\n"})
    yield server
    server.stop()


@pytest.fixture(scope="session")
def sshserver(tmp_path_factory, gitserver):
    """OpenSSH's sshd on 127.0.0.1 serving the same repositories over SSH (tests.repos.sshserver)."""
    server = SSHServer(tmp_path_factory.mktemp("sshd"), gitserver.root).start()
    yield server
    server.stop()


@pytest.fixture
def allow_private(settings):
    settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS = True
    return settings


@pytest.fixture
def repo_project(alice, allow_private, gitserver):
    def configure(url: str, token: str = "", username: str = "", setup: str = "", branch: str = ""):
        project = alice.project
        project.repo_url, project.repo_username, project.setup_script = url, username, setup
        project.repo_default_branch = branch
        from hangar.projects import crypto

        project.repo_token_encrypted = crypto.encrypt(token) if token else ""
        project.save()
        return project

    return configure


def session_over_api(api, persona, made: list[str]):
    """A session created through the API, as the web app does: (session, its sandbox, its workspace URL)."""
    from hangar.conversations.models import Session
    from hangar.engine.workspace.sandboxes import sandbox_for

    base = f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/"
    response = api(persona).post(base, {"title": "t"}, format="json")
    assert response.status_code == 201, response.content
    made.append(response.json()["id"])
    session = Session.objects.get(pk=response.json()["id"])
    return session, sandbox_for(session), base + f"{session.pk}/workspace/"


def operation_over_api(api, persona, url: str, kind: str, body: dict):
    """Ask for a push or pull through the API, then run it here, as the worker's task does (so this
    process's log is the one examined)."""
    from hangar.engine import repo_ops
    from hangar.repos.models import WorkspaceOperation

    response = api(persona).post(url + f"{kind}/", body, format="json")
    assert response.status_code == 202, response.content
    repo_ops.operation_run(response.json()["operation"]["id"])
    return WorkspaceOperation.objects.get(pk=response.json()["operation"]["id"])
