"""The live rig for end-to-end OpenCode-client tests: Daphne serving Hangar (ASGI) against pytest's test
database, the engine's Celery worker and scripted LLM server (tests.engine.conftest), a project whose
default model is a script, and the stock clients from tests/opencode_client (npm)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from tests import shared_workers
from tests.engine.conftest import QUEUE, ROOT, give_scripted_credential

CLIENT_DIR = ROOT / "tests" / "opencode_client"
OPENCODE_BIN = CLIENT_DIR / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Daphne:
    def __init__(self, db_name: str, env: dict[str, str] | None = None, *, public: bool = False):
        """`public`: Hangar's public URL is this server's own (HANGAR_PUBLIC_URL), for the flows whose
        redirects come back to it, as an MCP server's OAuth callback does."""
        self.port = free_port()
        env = {
            **os.environ,
            **({"HANGAR_PUBLIC_URL": self.url} if public else {}),
            **(env or {}),
            "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{db_name}",
            "HANGAR_ENGINE_QUEUE": QUEUE,
            "PYTHONPATH": f"{ROOT}/platform:{ROOT}",
            "DJANGO_SETTINGS_MODULE": "hangar.settings",
            "HANGAR_PYTHON": sys.executable,
        }
        self.log_path = Path(f"/tmp/{QUEUE}-daphne-{uuid.uuid4().hex[:4]}.log")
        self.log = self.log_path.open("w")
        # The web as deployed (deploy/run-web.sh: its DB pool), with this interpreter.
        self.proc = subprocess.Popen(
            [str(ROOT / "deploy" / "run-web.sh"), "-b", "127.0.0.1", "-p", str(self.port)],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log_path.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("daphne did not start listening")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="module")
def daphne(process_servers) -> Daphne:
    """The web, one per test process for every module that asks for this one: a start costs seconds of
    CPU (Django, Channels, the app) and a running server holds nothing of a test's but its log (each
    test's rows and ids are its own). Keyed by the environment it would inherit, as shared workers are
    (tests/shared_workers.py); modules that need other settings start their own."""
    db_name = settings.DATABASES["default"]["NAME"]
    key = shared_workers.environment_key({"HANGAR_TEST_DB": db_name})
    server = process_servers.get(key)
    if server is None or server.proc.poll() is not None:
        server = process_servers[key] = Daphne(db_name)
    return server


@pytest.fixture
def scripted_project(scripted, script):
    """`scripted_project(persona, turns)` → the persona's project, its default model now the script."""

    def make(persona, turns: list, title: str = "Scripted title"):
        script_id = script.load(turns, title=title)
        give_scripted_credential(persona.org, scripted)
        persona.project.default_model = f"scripted/{script_id}"
        persona.project.save()
        return persona.project

    return make


def opencode_env(tmp_path: Path) -> dict:
    """A throwaway HOME so the CLI neither reads nor writes the machine's OpenCode state."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_SHARE": "1",
    }


def run_sdk_flow(script: str, daphne, project, persona, **env: str) -> dict:
    """Run `tests/opencode_client/<script>` (a flow on the stock @opencode-ai/sdk) against `project` as
    `persona`; its last printed line, as JSON."""
    done = subprocess.run(
        ["node", script],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=150,
        env={**os.environ, "OC_BASE": f"{daphne.url}/oc/{project.pk}", "OC_TOKEN": persona.token, **env},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def call(name: str, call_id: str, **arguments) -> dict:
    return {"tool_calls": [{"name": name, "id": call_id, "arguments": arguments}]}
