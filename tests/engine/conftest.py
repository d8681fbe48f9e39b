"""Engine test rig: the scripted LLM server over real HTTP, real Celery worker processes (thread pool)
on a queue of their own, pointed at pytest's test database, the real Docker sandbox."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from hangar.conversations.models import Message, Part, Session
from hangar.conversations.services import session_create
from hangar.integrations.queue import WEBHOOKS_QUEUE
from hangar.projects import crypto
from hangar.projects.models import ProviderCredential
from scripted_llm import ScriptedServer
from tests import shared_workers

ROOT = Path(__file__).resolve().parents[2]
QUEUE = os.environ["HANGAR_ENGINE_QUEUE"]  # the run's own queue (tests/envdefaults.py chose it)
REPO_QUEUE = (
    f"{QUEUE}.repo"  # clones, setup scripts, pushes: hangar.engine.session.enqueue.repo_queue's default
)
os.environ.setdefault("HANGAR_SANDBOX_POOL", "0")  # the test process only cleans up; workers keep a pool


@pytest.fixture(scope="session")
def scripted():
    server = ScriptedServer().start()
    yield server
    server.stop()


class Script:
    def __init__(self, server: ScriptedServer):
        self.server = server

    def load(
        self,
        turns: list,
        title: str = "Scripted title",
        loop: bool = False,
        shared: bool = False,
        script_id: str | None = None,
    ) -> str:
        """Load a script; `script_id` replaces a loaded one (its turn counters start again)."""
        script_id = script_id or f"s-{uuid.uuid4().hex[:10]}"
        # json.dumps escapes to ASCII, so a script may hold text UTF-8 cannot carry (a lone surrogate), as a
        # model's JSON-escaped stream can.
        httpx.post(
            f"http://127.0.0.1:{self.server.port}/_scripts",
            content=json.dumps(
                {"id": script_id, "turns": turns, "title": title, "loop": loop, "shared": shared}
            ),
            headers={"content-type": "application/json"},
        ).raise_for_status()
        return script_id

    def requests(self, script_id: str) -> list[dict]:
        return httpx.get(
            f"http://127.0.0.1:{self.server.port}/_requests", params={"script": script_id}
        ).json()


@pytest.fixture
def script(scripted) -> Script:
    return Script(scripted)


class Worker:
    def __init__(
        self,
        db_name: str,
        beat: bool = False,
        concurrency: int = 20,
        env: dict | None = None,
        queues: list[str] | None = None,
    ):
        env = {
            **os.environ,
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}",
            "HANGAR_ENGINE_QUEUE": QUEUE,
            "HANGAR_WEBHOOKS_QUEUE": WEBHOOKS_QUEUE,
            "HANGAR_SANDBOX_POOL": "1",
            "PYTHONPATH": f"{ROOT}/platform:{ROOT}",
            "HANGAR_LEASE_TTL_S": "6",
            **(env or {}),
        }
        cmd = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "hangar",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(concurrency),
            "-Q",
            # The engine's queue, the repository work's (hangar.engine.session.enqueue.repo_queue) and the webhook
            # deliveries' (hangar.integrations.queue).
            ",".join(queues or [QUEUE, REPO_QUEUE, WEBHOOKS_QUEUE]),
            "--loglevel",
            "WARNING",
            "-n",
            f"w{uuid.uuid4().hex[:6]}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
        if beat:
            cmd += ["-B", "--schedule", f"/tmp/{QUEUE}-{uuid.uuid4().hex[:4]}-beat"]
        # Held open for the worker's life (its stdout), closed in kill().
        self.log = open(f"/tmp/{QUEUE}-worker-{uuid.uuid4().hex[:4]}.log", "w")  # noqa: SIM115
        # A process group of its own: a kill reaches the embedded beat's child too (-B), as a supervisor's
        # kill of the worker's container would. Killed alone, that child lived on after the test.
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def kill(self, sig=signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a warm shutdown that outlasts its test: it ends here
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of the group outlived the worker

    def stop(self) -> None:
        self.kill(signal.SIGTERM if self.proc.poll() is None else signal.SIGKILL)
        self.log.close()


@pytest.fixture
def start_worker(django_db_setup):
    started: list[Worker] = []
    db_name = settings.DATABASES["default"]["NAME"]

    def start(
        beat: bool = False, env: dict | None = None, concurrency: int = 20, queues: list[str] | None = None
    ) -> Worker:
        worker = Worker(db_name, beat=beat, env=env, concurrency=concurrency, queues=queues)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(scope="module")
def module_workers(django_db_setup):
    """`module_workers(env)`: a worker the module's consecutive tests share (tests/shared_workers.py). A test
    that kills, stops or measures its worker asks `start_worker` for one of its own."""
    db_name = settings.DATABASES["default"]["NAME"]
    yield lambda env=None: shared_workers.get(env, lambda: Worker(db_name, env=env))
    shared_workers.stop_all()


@pytest.fixture
def worker(module_workers) -> Worker:
    return module_workers()


def give_scripted_credential(org, server: ScriptedServer) -> None:
    """The org can call the scripted LLM server (provider `scripted`)."""
    ProviderCredential.objects.get_or_create(
        org=org,
        user=None,
        provider="scripted",
        defaults={"api_base": server.url, "api_key_encrypted": crypto.encrypt("sk-test")},
    )


@pytest.fixture
def scripted_credential(scripted):
    """`scripted_credential(persona)`: the persona's org can call the scripted LLM server."""
    return lambda persona: give_scripted_credential(persona.org, scripted)


def destroy_sandboxes(session_ids: list[str]) -> None:
    from hangar.engine.workspace.sandboxes import manager

    for session_id in session_ids:
        try:
            manager().destroy(session_id)
        except Exception:
            pass  # never made, or gone already: nothing of it is left to remove


@pytest.fixture
def sessions_made():
    """Session ids whose sandboxes (container, volume, host git dir) are destroyed after the test."""
    made: list[str] = []
    yield made
    destroy_sandboxes(made)


@pytest.fixture
def make_session(scripted, sessions_made):
    def make(persona, script_id: str, **kwargs) -> Session:
        give_scripted_credential(persona.org, scripted)
        session = session_create(
            actor=persona.actor,
            project=persona.project,
            model={"providerID": "scripted", "modelID": script_id},
            **kwargs,
        )
        sessions_made.append(session.pk)
        return session

    return make


def wait_for(predicate, timeout: float = 60.0, every: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def wait_idle(session: Session, timeout: float = 120.0) -> Session:
    """A ceiling, not a speed check: a test's first run waits for its worker to start and a cold sandbox,
    which under a loaded machine took over 60 s (a run that hangs still fails)."""

    def idle():
        s = Session.objects.get(pk=session.pk)
        return s if s.status == "idle" and not s.lease_owner and not s.run_requested else None

    return wait_for(idle, timeout, what=f"session {session.pk} idle")


def tool_parts(session: Session) -> list[dict]:
    return [p.data for p in Part.objects.filter(session=session, type="tool").order_by("id")]


def assistant_messages(session: Session) -> list[dict]:
    return [m.data for m in Message.objects.filter(session=session, role="assistant").order_by("id")]


def text_of(session: Session) -> str:
    return "".join(
        p.data["text"]
        for p in Part.objects.filter(session=session, type="text").order_by("id")
        if p.message.role == "assistant"
    )


def text_prompt(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]
