"""Two engine workers acquiring one homeless session at once, each having placed it on another host
(docs/scale-out.md, "The host queues"): exactly one host binds it and makes its sandbox (or imports its
exported workspace); the other makes nothing and the worker that asked it is sent to the winner
(hangar.engine.workspace.hosts.place_here, hangar.conversations.host_services.session_sandbox_host_bind).

Two host services on this machine's one Docker engine, `race-a` and `race-b`, each with a sandbox root of
its own; the two engine workers are two threads of this process driving hangar.engine.workspace.remote
(as a worker without Docker does), whose placement sends one to each host. The barrier: this test holds
the session's row lock until both host services are blocked on binding it, so both have read it
homeless before either binds, then lets them go together.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
from django.db import connection, transaction

from hangar.conversations.host_selectors import host_named
from hangar.conversations.models import Session
from hangar.conversations.services import session_create
from hangar.engine.workspace import hosts as workspace_hosts
from hangar.engine.workspace import remote, sandboxes
from hangar.engine.workspace.host_names import host_queue
from hangar.engine.workspace.specs import spec_for
from sandbox import channel, containers, registry, volumes, workspace_archive
from tests.engine.conftest import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

HOSTS = ("race-a", "race-b")
BASE_ROOT = os.environ.get("HANGAR_SANDBOX_ROOT", "/var/lib/hangar").rstrip("/")
ROOTS = {name: Path(f"{BASE_ROOT}-{name}") for name in HOSTS}  # fixed: one channel network each, reused
CHOICE = {"engine-1": "race-a", "engine-2": "race-b"}  # each engine worker's placement, by thread

# Backends of this test's database waiting on a lock to bind the session (the host services' UPDATE).
_WAITING_TO_BIND = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND wait_event_type = 'Lock' AND query LIKE %s"
)


@contextlib.contextmanager
def _root(path: Path) -> Iterator[None]:
    """Read another host's sandbox root from this process."""
    before, volumes.ROOT = volumes.ROOT, path
    try:
        yield
    finally:
        volumes.ROOT = before


def _files(root: Path) -> set[str]:
    """A host root's volume images and mount points."""
    return {str(p) for sub in ("volumes", "mnt") for p in (root / sub).glob("*")}


def _waiting_to_bind() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # inside a transaction the view is cached
        cursor.execute(_WAITING_TO_BIND, ['UPDATE "conversations_session" SET "sandbox_host_id"%'])
        return int(cursor.fetchone()[0])


@pytest.fixture
def two_hosts_one_engine(start_worker, monkeypatch, tmp_path):
    """The host services race-a and race-b, sharing an archive of moved workspaces."""
    archive = str(tmp_path / "archive")
    monkeypatch.setenv(channel.SETTING, "tcp")
    monkeypatch.setenv(workspace_archive.SETTING, archive)
    for name in HOSTS:
        start_worker(
            env={
                channel.SETTING: "tcp",
                workspace_archive.SETTING: archive,
                "HANGAR_SANDBOX_POOL": "0",
                "HANGAR_SANDBOX_HOST": name,
                "HANGAR_SANDBOX_ROOT": str(ROOTS[name]),
            },
            queues=[host_queue(name)],
            concurrency=4,
        )
    wait_for(lambda: all(host_named(name) for name in HOSTS), 120, what="both hosts registered")
    return HOSTS


def _race(session: Session, request) -> tuple[str, str, dict[str, Any]]:
    """Two engine workers (threads) acquire `session` at once, one through each host; the barrier holds
    both host services at the bind. (winner, loser, each worker's connection to the agent)."""
    boxes: dict[str, Any] = {}
    failures: list[BaseException] = []

    def acquire() -> None:
        try:
            boxes[threading.current_thread().name] = remote._acquire(Session.objects.get(pk=session.pk))
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    workers = [threading.Thread(target=acquire, name=name) for name in CHOICE]
    with transaction.atomic():
        Session.objects.select_for_update().get(pk=session.pk)  # the barrier: both hosts wait on it
        for worker in workers:
            worker.start()
        wait_for(lambda: _waiting_to_bind() == 2, 120, what="both host services binding the session")
        assert Session.objects.get(pk=session.pk).sandbox_host_id is None
    for worker in workers:
        worker.join(300)
    request.addfinalizer(lambda: remote.remote_destroy(session.pk))
    assert not failures, failures
    winner = Session.objects.get(pk=session.pk).sandbox_host_id
    assert winner in HOSTS
    return winner, next(name for name in HOSTS if name != winner), boxes


def _one_sandbox_on(winner: str, session: Session) -> None:
    """The session's one container stands on a volume of the winner's root, registered there."""
    info = docker.from_env().api.inspect_container(containers.session_container_name(session.pk))
    volume = info["Config"]["Labels"]["hangar.volume"]
    assert (ROOTS[winner] / "volumes" / f"{volume}.img").exists()
    with _root(ROOTS[winner]):
        assert (registry.lookup(volumes.session_key(session.pk)) or {}).get("volume") == volume


def _made_nothing(loser: str, session: Session, before: set[str]) -> None:
    with _root(ROOTS[loser]):
        assert registry.lookup(volumes.session_key(session.pk)) is None
    assert _files(ROOTS[loser]) == before


def test_two_workers_acquiring_one_homeless_session_place_it_once(
    alice, two_hosts_one_engine, monkeypatch, request
):
    # Each engine worker's placement chose another host (their views of the hosts differed).
    monkeypatch.setattr(
        workspace_hosts, "choose_host", lambda session: CHOICE[threading.current_thread().name]
    )

    # A new session: one sandbox, which both workers reach (a file one writes, the other reads).
    session = session_create(actor=alice.actor, project=alice.project, model={})
    before = {name: _files(ROOTS[name]) for name in HOSTS}
    winner, loser, boxes = _race(session, request)
    boxes["engine-1"].call("write", {"path": "/workspace/race.txt", "content": "one sandbox\n"})
    read = boxes["engine-2"].call("read", {"path": "/workspace/race.txt", "offset": 0, "limit": 10})
    assert read["content"].startswith("one sandbox")
    _one_sandbox_on(winner, session)
    _made_nothing(loser, session, before[loser])

    # A session whose workspace a drained host exported (this process's root plays that host): one host
    # imports it, the other neither imports nor makes an empty workspace.
    moved = session_create(actor=alice.actor, project=alice.project, model={})
    drained = sandboxes.manager_without_pool()
    drained.get_or_create(spec_for(moved)).write("/workspace/moved.txt", "came along\n")
    drained.hibernate(moved.pk)
    workspace_archive.export(drained.api, moved.pk)
    before = {name: _files(ROOTS[name]) for name in HOSTS}
    winner, loser, boxes = _race(moved, request)
    for box in boxes.values():
        read = box.call("read", {"path": "/workspace/moved.txt", "offset": 0, "limit": 10})
        assert read["content"].startswith("came along")
    _one_sandbox_on(winner, moved)
    _made_nothing(loser, moved, before[loser])
    assert not workspace_archive.exported(moved.pk)  # taken once, kept as the session's checkpoint
    assert all(path.exists() for path in workspace_archive.checkpoint_paths(moved.pk))
