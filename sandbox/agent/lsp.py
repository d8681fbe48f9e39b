"""Language servers inside the sandbox: started when a session first touches a file of their language,
stopped when idle, so a session that never needs one pays nothing for it.

The host asks for a file's diagnostics after it changed it (`touch`, bounded wait), or runs one query
(definition, references, hover, symbols). A server is a child process speaking LSP (JSON-RPC in
Content-Length frames) over its stdio, as uid 1000 under the sandbox's limits and network policy, with
no environment beyond PATH/HOME/LANG (the project's variables are for commands, not for it), its heap
capped and its stderr dropped.

Whether a language runs a server follows OpenCode 1.18.33's `lsp` key in the workspace's opencode.json
(omitted or false: none; true: the built-ins; an object: the built-ins, minus those it marks
`{"disabled": true}`), unless the operator's mode (`mode` in the request: HANGAR_LSP) is "on" (the
built-ins unless the workspace says false) or "off". A missing, slow or crashed server yields no diagnostics, never an error
that fails an edit: a crashed one is started again on the next request, one that cannot start is left
alone for BROKEN_S.
"""

from __future__ import annotations

import json
import os
import threading
import time

from lspserver import HOME, WORKSPACE, Server, ServerGone, Spec, path_of, uri_of
from wire import BadRequest

IDLE_S = float(os.environ.get("HANGAR_LSP_IDLE_S", "600"))
BROKEN_S = 60.0
MAX_WAIT_MS = 30_000  # a cold TypeScript server took 19 s on a loaded 2-core machine
MAX_FILE_BYTES = 2 * 1024 * 1024
MAX_FILES, MAX_PER_FILE, MAX_MESSAGE = 50, 50, 1000
QUERIES = {
    "definition": "textDocument/definition",
    "references": "textDocument/references",
    "implementation": "textDocument/implementation",
    "hover": "textDocument/hover",
    "documentSymbol": "textDocument/documentSymbol",
    "workspaceSymbol": "workspace/symbol",
}


SPECS = (
    Spec(
        "pyright", "pyright", {".py": "python", ".pyi": "python"}, ("pyright/langserver.index.js", "--stdio")
    ),
    Spec(
        "typescript",
        "typescript",
        {
            ".ts": "typescript",
            ".mts": "typescript",
            ".cts": "typescript",
            ".tsx": "typescriptreact",
            ".js": "javascript",
            ".mjs": "javascript",
            ".cjs": "javascript",
            ".jsx": "javascriptreact",
        },
        ("typescript-language-server/lib/cli.mjs", "--stdio"),
        {"tsserver": {"path": f"{HOME}/typescript/lib"}},
    ),
)


def configured(mode: str) -> set[str]:
    """The server ids the workspace's config and the operator's mode turn on."""
    if mode == "off":
        return set()
    try:
        with open(f"{WORKSPACE}/opencode.json", "rb") as fh:
            config = json.loads(fh.read(256 * 1024))
        setting = config.get("lsp") if isinstance(config, dict) else None
    except (OSError, ValueError):
        setting = None
    if setting is None:
        setting = mode == "on"
    if setting is False:
        return set()
    ids = {spec.id for spec in SPECS}
    if isinstance(setting, dict):
        return {
            i for i in ids if not (isinstance(setting.get(i), dict) and setting[i].get("disabled") is True)
        }
    return ids if setting else set()


def _diagnostic(d: dict) -> dict:
    return {
        "range": d.get("range"),
        "severity": d.get("severity"),
        "message": str(d.get("message", ""))[:MAX_MESSAGE],
        "source": d.get("source"),
        "code": d.get("code"),
    }


class LanguageServers:
    def __init__(self) -> None:
        self.servers: dict[str, Server] = {}
        self.broken: dict[str, tuple[float, str]] = {}  # spec id -> (since, why)
        self.restarts: dict[str, int] = {}
        self.locks = {spec.id: threading.Lock() for spec in SPECS}
        threading.Thread(target=self._reap_idle, daemon=True, name="lsp-reaper").start()

    def _spec_for(self, path: str) -> Spec | None:
        ext = os.path.splitext(path)[1].lower()
        return next((s for s in SPECS if ext in s.languages), None)

    def _server(self, spec: Spec) -> Server | None:
        """The running server for `spec`, started if needed; None if it cannot run now."""
        with self.locks[spec.id]:
            server = self.servers.get(spec.id)
            if server is not None and server.alive():
                return server
            if server is not None:  # crashed: start a new one
                self.restarts[spec.id] = self.restarts.get(spec.id, 0) + 1
                del self.servers[spec.id]
            since, _ = self.broken.get(spec.id, (0.0, ""))
            if time.monotonic() - since < BROKEN_S:
                return None
            try:
                server = Server(spec)
            except (OSError, ServerGone) as exc:
                self.broken[spec.id] = (time.monotonic(), str(exc))
                return None
            self.broken.pop(spec.id, None)
            self.servers[spec.id] = server
            return server

    @staticmethod
    def _path(args: dict) -> str:
        path = os.path.normpath(str(args.get("path") or ""))
        if not path.startswith(WORKSPACE + "/"):
            raise BadRequest("path must be a file under /workspace")
        return path

    def touch(self, args: dict) -> dict:
        """Sync the file to its language's server and return what the servers publish, waiting up to
        `wait_ms` for this file's diagnostics."""
        path = self._path(args)
        wait_s = max(0, min(int(args.get("wait_ms", 3000)), MAX_WAIT_MS)) / 1000
        spec = self._spec_for(path)
        if spec is None or spec.id not in configured(str(args.get("mode", "auto"))):
            return {"server": None, "diagnostics": {}}
        try:
            with open(path, "rb") as fh:
                text = fh.read(MAX_FILE_BYTES + 1).decode("utf-8", "replace")
        except OSError:
            return {"server": None, "diagnostics": {}}
        if len(text) > MAX_FILE_BYTES:
            return {"server": None, "diagnostics": {}}
        if not wait_s:  # a warm-up (the read tool): start the server and sync in the background
            threading.Thread(target=self._sync, args=(spec, path, text), daemon=True).start()
            return {"server": spec.id, "diagnostics": {}}
        server = self._server(spec)
        if server is None:
            return {"server": None, "diagnostics": {}}
        try:
            with server.cond:
                seen = server.published.get(uri_of(path), 0)
            uri = server.sync(path, text)
            if wait_s:
                server.wait_published(uri, seen, wait_s)
        except ServerGone:
            return {"server": None, "diagnostics": {}}
        return {"server": spec.id, "diagnostics": self.published()}

    def _sync(self, spec: Spec, path: str, text: str) -> None:
        server = self._server(spec)
        if server is not None:
            try:
                server.sync(path, text)
            except ServerGone:
                pass

    def published(self) -> dict[str, list]:
        """Every running server's latest diagnostics, by path, bounded."""
        found: dict[str, list] = {}
        for server in list(self.servers.values()):
            with server.cond:
                items = list(server.diagnostics.items())
            for uri, diags in items:
                if diags and len(found) < MAX_FILES:
                    found[path_of(uri)] = [_diagnostic(d) for d in diags[:MAX_PER_FILE]]
        return found

    def query(self, args: dict) -> dict:
        """One LSP query. `line`/`character` are 0-based, as on the wire."""
        kind = args.get("query")
        if kind not in QUERIES:
            raise BadRequest(f"query must be one of {sorted(QUERIES)}")
        if kind == "workspaceSymbol" and not args.get("path"):
            results: list = []
            for running in list(self.servers.values()):
                if running.alive():
                    try:
                        results += running.request(QUERIES[kind], {"query": str(args.get("text", ""))}) or []
                    except ServerGone:
                        continue
            return {"result": results[:500]}
        path = self._path(args)
        spec = self._spec_for(path)
        server = self._server(spec) if spec else None
        if spec is None or server is None:
            return {"result": None, "server": None}
        try:
            with open(path, "rb") as fh:
                text = fh.read(MAX_FILE_BYTES).decode("utf-8", "replace")
            uri = uri_of(path) if uri_of(path) in server.versions else server.sync(path, text)
            position = {"line": int(args.get("line", 0)), "character": int(args.get("character", 0))}
            params: dict = {"textDocument": {"uri": uri}}
            if kind == "workspaceSymbol":
                params = {"query": str(args.get("text", ""))}
            elif kind != "documentSymbol":
                params["position"] = position
            if kind == "references":
                params["context"] = {"includeDeclaration": True}
            return {"result": server.request(QUERIES[kind], params), "server": spec.id}
        except ServerGone as exc:
            return {"result": None, "server": spec.id, "error": str(exc)}

    def status(self, args: dict) -> list[dict]:
        rows = []
        for spec in SPECS:
            server = self.servers.get(spec.id)
            if server is not None:
                state = "connected" if server.alive() else "error"
            elif spec.id in self.broken:
                state = "error"
            else:
                continue
            rows.append(
                {
                    "id": spec.id,
                    "name": spec.name,
                    "root": WORKSPACE,
                    "status": state,
                    "pid": server.proc.pid if server is not None else None,
                    "restarts": self.restarts.get(spec.id, 0),
                }
            )
        return rows

    def stop_all(self, args: dict | None = None) -> dict:
        stopped = 0
        for spec_id in list(self.servers):
            with self.locks[spec_id]:
                server = self.servers.pop(spec_id, None)
            if server is not None:
                server.stop()
                stopped += 1
        return {"stopped": stopped}

    def _reap_idle(self) -> None:
        while True:
            time.sleep(min(30.0, IDLE_S))
            now = time.monotonic()
            for spec_id, server in list(self.servers.items()):
                if now - server.used > IDLE_S:
                    with self.locks[spec_id]:
                        if self.servers.get(spec_id) is server:
                            del self.servers[spec_id]
                    server.stop()
