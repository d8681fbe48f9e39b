"""OpenCode's side of bench/agent_step.py: `opencode serve` from tests/opencode_client, pointed at the scripted
server by an opencode.json custom provider, and the HTTP client both sides are driven with (OpenCode's own
API: sessions, prompt_async, the /event stream), as OpenCode's clients drive it."""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import common
import httpx
from common import ROOT, free_port, log, stop, wait_port

OPENCODE_BIN = ROOT / "tests/opencode_client/node_modules/opencode-linux-x64/bin/opencode"


class OpenCodeClient:
    def __init__(self, base: str, password: str):
        auth = base64.b64encode(f"opencode:{password}".encode()).decode()
        self.base = base.rstrip("/")
        self.http = httpx.Client(headers={"Authorization": f"Basic {auth}"}, timeout=120)
        self.events: queue.Queue = queue.Queue()
        self._connected = threading.Event()
        self._wait_ready()
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._connected.wait(90):
            raise RuntimeError(f"no server.connected from {self.base}/event")

    def _wait_ready(self) -> None:
        """A freshly started `opencode serve` can leave its first /event request hanging: probe with a
        short timeout until one answers with server.connected."""
        for _ in range(30):
            try:
                with self.http.stream("GET", f"{self.base}/event", timeout=5) as response:
                    for line in response.iter_lines():
                        if "server.connected" in line:
                            return
            except httpx.HTTPError:
                time.sleep(0.5)

    def _pump(self) -> None:
        # A freshly started `opencode serve` may drop the first connections while it boots: retry.
        for _ in range(60):
            try:
                with self.http.stream("GET", f"{self.base}/event", timeout=None) as response:
                    response.raise_for_status()
                    for line in response.iter_lines():
                        if not line.startswith("data: "):
                            continue
                        event = json.loads(line[6:])
                        if event["type"] == "server.connected":
                            self._connected.set()
                        self.events.put((time.perf_counter(), event))
            except httpx.HTTPError as exc:
                if self._connected.is_set():
                    log(f"event stream from {self.base} ended: {exc!r}")
                    return
                time.sleep(1)

    def session(self, prompt: str) -> float:
        """Create a session, prompt it, return the wall time from prompt to `session.idle`."""
        session_id = self.http.post(f"{self.base}/session", json={}).raise_for_status().json()["id"]
        started = time.perf_counter()
        self.http.post(
            f"{self.base}/session/{session_id}/prompt_async",
            json={"parts": [{"type": "text", "text": prompt}]},
        ).raise_for_status()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                at, event = self.events.get(timeout=1)
            except queue.Empty:
                continue
            props = event.get("properties", {})
            if props.get("sessionID") != session_id:
                continue
            if event["type"] == "session.error":
                raise RuntimeError(f"session error: {props}")
            if event["type"] == "session.idle":
                self.last_session = session_id
                return at - started
        raise RuntimeError(f"session {session_id} did not finish")

    def tools(self, session_id: str) -> list[tuple[str, str]]:
        messages = self.http.get(f"{self.base}/session/{session_id}/message").raise_for_status().json()
        return [
            (p["tool"], p["state"]["status"]) for m in messages for p in m["parts"] if p["type"] == "tool"
        ]


# --- the scripted server and its own time --------------------------------------------------------------


class OpenCode:
    def __init__(self, scripted: common.Scripted, script_id: str):
        self.dir = Path(tempfile.mkdtemp(prefix="opencode-bench-"))
        self.project_dir = self.dir / "project"
        self.project_dir.mkdir()
        home = self.dir / "home"
        home.mkdir()
        config = {
            "$schema": "https://opencode.ai/config.json",
            "model": f"scripted/{script_id}",
            "provider": {
                "scripted": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted",
                    "options": {"baseURL": scripted.url, "apiKey": "sk-bench"},
                    "models": {script_id: {"name": "Scripted"}},
                }
            },
        }
        (self.project_dir / "opencode.json").write_text(json.dumps(config))
        subprocess.run(["git", "init", "-q"], cwd=self.project_dir, check=True)
        self.password = uuid.uuid4().hex
        self.port = free_port()
        env = {
            **os.environ,
            "HOME": str(home),
            "OPENCODE_SERVER_PASSWORD": self.password,
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
        }
        self.proc = subprocess.Popen(
            [str(OPENCODE_BIN), "serve", "--port", str(self.port), "--hostname", "127.0.0.1"],
            cwd=self.project_dir,
            env=env,
            stdout=(self.dir / "serve.log").open("w"),
            stderr=subprocess.STDOUT,
        )
        wait_port(self.port, self.proc, "opencode serve")
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop(self.proc, timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)
