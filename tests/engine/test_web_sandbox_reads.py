"""The sandbox work a web request does itself — a member's file reads and searches, the workspace archive —
is harmless to the web tier (issue 25, "members' file reads and archives still do sandbox work in the web
process"; hangar.engine.workspace.web_sandbox says why it stays there): the web never starts a sandbox (a worker
does, asked by the read), the work is bounded per org across processes and per process (429 beyond),
every request ends by a total deadline, and no database connection is held across the sandbox call. A
real Docker sandbox, real Redis, real Postgres, a real worker for the start."""

import contextlib
import fcntl
import os

import docker
import pytest
from django.db import connection

from hangar.conversations.models import Session
from hangar.engine.workspace import web_sandbox, workspace_files
from hangar.engine.workspace.sandboxes import manager, sandbox_for
from hangar.engine.workspace.web_sandbox import Slot
from sandbox import registry, volumes
from sandbox.containers import session_container_name
from tests.engine.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]


def _new_session(api, persona, sessions_made) -> Session:
    base = f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/"
    session = Session.objects.get(pk=api(persona).post(base, {"title": "t"}, format="json").json()["id"])
    sessions_made.append(session.pk)
    return session


def _url(persona, session, what: str) -> str:
    return (
        f"/api/orgs/{persona.org.slug}/projects/{persona.project.pk}/sessions/{session.pk}/workspace/{what}"
    )


def test_a_members_read_never_starts_a_sandbox_in_the_web_process(
    api, alice, bob, sessions_made, start_worker
):
    session = _new_session(api, alice, sessions_made)
    # Before: the member's read created, started and prepared the sandbox in the web process (200).
    listing = api(bob).get(_url(alice, session, "files/"), {"path": ""})
    assert listing.status_code == 409, listing.content
    assert "starting" in listing.json()["error"]["message"]
    assert registry.lookup(volumes.session_key(session.pk)) is None  # nothing was created here
    assert api(bob).get(_url(alice, session, "archive/")).status_code == 409

    start_worker()  # the worker takes the start the read asked for (the repository queue)
    wait_for(lambda: manager().is_running(session.pk), 120, what="the sandbox started by a worker")
    sandbox_for(session).write("/workspace/notes.txt", "hello\n")
    read = api(bob).get(_url(alice, session, "file/"), {"path": "notes.txt"})
    assert read.status_code == 200 and read.json()["content"] == "hello\n"


def test_a_read_while_the_agent_is_not_answering_yet_is_a_409_to_try_again(
    api, alice, bob, sessions_made, start_worker
):
    """A resume: Docker says the container runs a moment before its agent binds the relay socket a web
    process reads through. Seen in the first-week test as a 500 under load; now the 409 a reader retries."""
    session = _new_session(api, alice, sessions_made)
    assert api(bob).get(_url(alice, session, "files/"), {"path": ""}).status_code == 409  # asks a start
    start_worker()
    wait_for(lambda: manager().is_running(session.pk), 120, what="the sandbox started by a worker")
    container = docker.from_env().containers.get(session_container_name(session.pk))
    # Another holder of the attach lock (the worker that started it, or this one): the read relays.
    lock = os.open(volumes.lock_path(container.id), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        with contextlib.suppress(BlockingIOError):
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        # The agent before it bound its socket: the relay finds none (root's directory: root removes it).
        assert container.exec_run(["rm", "/run/hangar/agent.sock"], user="root").exit_code == 0
        read = api(bob).get(_url(alice, session, "file/"), {"path": "notes.txt"})
        assert read.status_code == 409, read.content
        assert "starting" in read.json()["error"]["message"]
    finally:
        os.close(lock)


def test_reads_are_bounded_per_org_across_processes_and_per_process(
    api, alice, charlie, sessions_made, settings
):
    settings.HANGAR_WEB_SANDBOX_PER_ORG = 1
    mine, theirs = _new_session(api, alice, sessions_made), _new_session(api, charlie, sessions_made)
    for session in (mine, theirs):
        sandbox_for(session).write("/workspace/a.txt", "a\n")
    # Another web process holds alice's org's one place (the places are in Redis, shared by every process).
    elsewhere = Slot(alice.org.pk, 30)
    try:
        busy = api(alice).get(_url(alice, mine, "file/"), {"path": "a.txt"})
        assert busy.status_code == 429 and "organisation" in busy.json()["error"]["message"]
        assert api(alice).get(_url(alice, mine, "archive/")).status_code == 429
        # Another org is not held back by alice's.
        assert api(charlie).get(_url(charlie, theirs, "file/"), {"path": "a.txt"}).status_code == 200
    finally:
        elsewhere.release()
    assert api(alice).get(_url(alice, mine, "file/"), {"path": "a.txt"}).status_code == 200

    # A place whose process died (its own count died with it; Redis keeps the org's) lapses at its deadline.
    web_sandbox._take_org(alice.org.pk, 0.5)  # never given back
    wait_for(
        lambda: api(alice).get(_url(alice, mine, "file/"), {"path": "a.txt"}).status_code == 200,
        10,
        what="the dead process's place lapsing",
    )

    settings.HANGAR_WEB_SANDBOX_CONCURRENCY = 1
    settings.HANGAR_WEB_SANDBOX_PER_ORG = 10
    here = Slot(charlie.org.pk, 30)  # this process's one place, taken by any org
    try:
        busy = api(alice).get(_url(alice, mine, "files/"), {"path": ""})
        assert busy.status_code == 429 and "here" in busy.json()["error"]["message"]
    finally:
        here.release()


def test_a_read_holds_no_database_connection_and_ends_by_its_deadline(
    api, alice, sessions_made, settings, monkeypatch
):
    session = _new_session(api, alice, sessions_made)
    sandbox_for(session).write("/workspace/a.txt", "a\n")
    seen = []
    real = workspace_files.running_box

    class Watched:
        """The sandbox, noting whether this thread holds a database connection at each call."""

        def __init__(self, box):
            self.box = box

        def __getattr__(self, name):
            attr = getattr(self.box, name)

            def call(*args, **kwargs):
                seen.append(connection.connection is not None)
                return attr(*args, **kwargs)

            return call

    monkeypatch.setattr(workspace_files, "running_box", lambda *a, **k: Watched(real(*a, **k)))
    assert api(alice).get(_url(alice, session, "file/"), {"path": "a.txt"}).status_code == 200
    assert api(alice).get(_url(alice, session, "files/"), {"path": ""}).status_code == 200
    assert seen and not any(seen)  # stat, read, exec: never with a connection held

    settings.HANGAR_WEB_SANDBOX_DEADLINE_S = 0.000001
    late = api(alice).get(_url(alice, session, "files/"), {"path": ""})
    assert late.status_code == 504 and "too long" in late.json()["error"]["message"]
