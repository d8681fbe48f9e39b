"""One language server process, spoken to in LSP (JSON-RPC in Content-Length frames) over its stdio: the
initialize handshake, requests with a deadline, answers to what the server asks, the documents sent to it
and the diagnostics it publishes. Which servers exist and when they run: lsp.py."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

WORKSPACE = "/workspace"
HOME = os.environ.get("HANGAR_LSP_HOME", "/opt/hangar/lsp/node_modules")
HEAP_MB = int(os.environ.get("HANGAR_LSP_HEAP_MB", "512"))
START_S = 30.0  # initialize handshake: a cold node start plus the server's own
SETTLE_S = 0.15  # servers publish in waves (TypeScript: syntax, then semantics): wait this long for more


@dataclass(frozen=True)
class Spec:
    id: str
    name: str
    languages: dict[str, str]  # file extension -> LSP languageId
    command: tuple[str, ...]  # script under HOME, then its arguments
    init_options: dict = field(default_factory=dict)


def uri_of(path: str) -> str:
    return "file://" + quote(path)


def path_of(uri: str) -> str:
    return unquote(uri[len("file://") :]) if uri.startswith("file://") else uri


class ServerGone(Exception):
    pass


class Server:
    """One running language server and what it has published."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.proc = subprocess.Popen(
            ["node", f"--max-old-space-size={HEAP_MB}", f"{HOME}/{spec.command[0]}", *spec.command[1:]],
            cwd=WORKSPACE,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": os.environ.get("HOME", "/tmp"),
                "LANG": "C.UTF-8",
            },
            start_new_session=True,
        )
        self.write_lock = threading.Lock()
        self.cond = threading.Condition()
        self.next_id = 0
        self.replies: dict[int, dict] = {}
        self.diagnostics: dict[str, list] = {}  # uri -> the last list published
        self.published: dict[str, int] = {}  # uri -> how many times
        self.versions: dict[str, int] = {}
        self.used = time.monotonic()
        threading.Thread(target=self._read, daemon=True, name=f"lsp-{spec.id}").start()
        self.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": uri_of(WORKSPACE),
                "rootPath": WORKSPACE,
                "workspaceFolders": [{"uri": uri_of(WORKSPACE), "name": "workspace"}],
                "initializationOptions": spec.init_options,
                "capabilities": {
                    "textDocument": {
                        "synchronization": {"didSave": True, "dynamicRegistration": False},
                        "publishDiagnostics": {"relatedInformation": False},
                        "hover": {"contentFormat": ["plaintext", "markdown"]},
                        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                    },
                    # Not `workspaceFolders`: with it, pyright 1.1.408 never analyses an opened file.
                    "workspace": {
                        "configuration": True,
                        "symbol": {},
                        "didChangeWatchedFiles": {"dynamicRegistration": True},
                    },
                    "window": {"workDoneProgress": False},
                },
            },
            timeout=START_S,
        )
        self.notify("initialized", {})

    # --- wire -------------------------------------------------------------------------------

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode()
        try:
            with self.write_lock:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise ServerGone(f"{self.spec.name} is gone: {exc}") from None

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    name, _, value = line.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                if length is None or length > 64 * 1024 * 1024:
                    return  # not LSP: treat the server as gone
                self._dispatch(json.loads(out.read(length)))
        except (OSError, ValueError):
            return
        finally:
            with self.cond:
                self.cond.notify_all()

    def _dispatch(self, msg: dict) -> None:
        method = msg.get("method")
        if method is None:
            with self.cond:
                if isinstance(msg.get("id"), int):
                    self.replies[msg["id"]] = msg
                self.cond.notify_all()
        elif "id" in msg:  # the server asks us something: answer so it never waits on us
            result = None
            if method == "workspace/configuration":
                result = [None for _ in (msg.get("params") or {}).get("items") or []]
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        elif method == "textDocument/publishDiagnostics":
            params = msg.get("params") or {}
            uri = params.get("uri", "")
            with self.cond:
                self.diagnostics[uri] = params.get("diagnostics") or []
                self.published[uri] = self.published.get(uri, 0) + 1
                self.cond.notify_all()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, method: str, params: dict, timeout: float = 10.0):
        with self.cond:
            self.next_id += 1
            rid = self.next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self.cond:
            while rid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    raise ServerGone(f"{self.spec.name} did not answer {method}")
                self.cond.wait(min(left, 0.5))
            reply = self.replies.pop(rid)
        if "error" in reply:
            raise ServerGone(f"{self.spec.name}: {(reply['error'] or {}).get('message', 'error')}")
        return reply.get("result")

    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    # --- documents --------------------------------------------------------------------------

    def sync(self, path: str, text: str) -> str:
        """Send the file's text (open or full change); returns its uri."""
        uri = uri_of(path)
        self.used = time.monotonic()
        version = self.versions.get(uri, 0) + 1
        self.versions[uri] = version
        # Servers cache the file tree (pyright resolves imports from it): tell them this file exists or
        # changed on disk, as an editor's file watcher would, or a module written after the server
        # started stays "could not be resolved".
        change = {"uri": uri, "type": 1 if version == 1 else 2}
        self.notify("workspace/didChangeWatchedFiles", {"changes": [change]})
        if version == 1:
            language = self.spec.languages[os.path.splitext(path)[1]]
            doc = {"uri": uri, "languageId": language, "version": 1, "text": text}
            self.notify("textDocument/didOpen", {"textDocument": doc})
        else:
            self.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            )
        self.notify("textDocument/didSave", {"textDocument": {"uri": uri}, "text": text})
        return uri

    def wait_published(self, uri: str, seen: int, timeout: float) -> None:
        """Until the server publishes for `uri` again (then a short settle for a second wave)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.published.get(uri, 0) <= seen and self.alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)
            settle = min(deadline, time.monotonic() + SETTLE_S)
            count = self.published.get(uri, 0)
            while self.published.get(uri, 0) == count and (left := settle - time.monotonic()) > 0:
                self.cond.wait(left)

    def stop(self) -> None:
        try:
            self.request("shutdown", {}, timeout=1.0)
            self.notify("exit", {})
            self.proc.wait(timeout=1.0)
        except (ServerGone, subprocess.TimeoutExpired):
            pass
        if self.alive():
            self.proc.kill()
            self.proc.wait()
