"""The loop's fast tier: the real loop (hangar.engine.run.loop.Loop), in this process, against the real store
(Postgres, inside the test's transaction) with an in-process scripted model and a local-directory sandbox.
No worker, no lease, no Docker, no HTTP: each test runs in well under a second. The end-to-end tier
(tests/engine/test_*.py) runs the same loop in a Celery worker against Docker and the scripted server."""

from __future__ import annotations

import threading

import pytest

from hangar.conversations.models import Message, Part, Session
from hangar.conversations.services import session_create
from hangar.engine.run.loop import Loop
from hangar.engine.services import session_prompt
from tests.engine.fast.scripted_model import ScriptedModel
from tests.engine.tools.local_sandbox import LocalSandbox


@pytest.fixture(scope="session", autouse=True)
def _warm_worker():
    """What a worker loads once as it starts (hangar.engine.tasks.warm_up_worker): every tool's schema."""
    from hangar.engine.tools.registry import ALL, tool_schemas

    tool_schemas(ALL)


@pytest.fixture(autouse=True)
def _no_slow_set_up(settings):
    # A priced model: an unknown one is looked up in LiteLLM's price map, and importing LiteLLM takes
    # seconds (the worker does it once as it starts: hangar.engine.tasks.warm_up_worker).
    settings.HANGAR_MODEL_PRICES = {
        "scripted/fast": {"input": 1e-6, "output": 2e-6},
        "scripted/small": {"input": 5e-7, "output": 1e-6},  # a subtask's own model (test_task_fast)
    }


@pytest.fixture(autouse=True)
def _no_litellm_map(monkeypatch):
    # Likewise the model catalogue: a model with no project limits is looked up in LiteLLM's model map
    # (engine/providers/catalogue.py), which LiteLLM's import alone makes seconds long. No model here is in
    # that map; the end-to-end tier and tests/engine/test_model_catalogue.py go through the real lookup.
    from hangar.engine.providers import catalogue

    monkeypatch.setattr(catalogue, "_from_litellm", lambda provider_id, model_id: None)


class Rig:
    def __init__(self, persona, sandbox: LocalSandbox):
        self.persona, self.sandbox = persona, sandbox
        self.session = session_create(
            actor=persona.actor, project=persona.project, model={"providerID": "scripted", "modelID": "fast"}
        )

    def prompt(self, text: str) -> None:
        session_prompt(actor=self.persona.actor, session=self.session, parts=[{"type": "text", "text": text}])

    def run(self, model: ScriptedModel, abort: threading.Event | None = None, **seams) -> Loop:
        seams.setdefault("resolve_model", lambda **_: model)
        seams.setdefault("sandbox_for", lambda _s: self.sandbox)
        loop = Loop(self.session.pk, abort or threading.Event(), **seams)
        loop.run()
        return loop

    def state(self) -> Session:
        return Session.objects.get(pk=self.session.pk)

    def assistants(self) -> list[dict]:
        return [m.data for m in Message.objects.filter(session=self.session, role="assistant").order_by("id")]

    def parts(self, kind: str) -> list[dict]:
        return [p.data for p in Part.objects.filter(session=self.session, type=kind).order_by("id")]


@pytest.fixture
def rig(alice, tmp_path) -> Rig:
    return Rig(alice, LocalSandbox(tmp_path))
