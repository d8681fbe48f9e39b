"""A real git smart-HTTP server for tests: `git http-backend` (CGI) behind a small threaded HTTP server on
127.0.0.1. Repositories under `private/` need HTTP basic auth; the others are public (push included, so
a test can move a branch "from elsewhere" with a plain clone)."""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class GitServer:
    def __init__(self, root: Path, users: dict[str, str]):
        self.root, self.users = root, users
        self.requests: list[dict] = []  # method, path, and the Authorization header seen
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._serve()

            def do_POST(self):
                self._serve()

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    out = bytearray()
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0], 16)
                        if size == 0:
                            self.rfile.readline()
                            return bytes(out)
                        out += self.rfile.read(size)
                        self.rfile.readline()
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def _serve(self):
                path, _, query = self.path.partition("?")
                auth = self.headers.get("Authorization", "")
                server.requests.append({"method": self.command, "path": path, "authorization": auth})
                user = ""
                if path.startswith("/private/"):
                    user = server.check(auth)
                    if not user:
                        self.send_response(401)
                        self.send_header("WWW-Authenticate", 'Basic realm="git"')
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                body = self._body() if self.command == "POST" else b""
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "GIT_CONFIG_NOSYSTEM": "1",
                    "HOME": str(server.root),
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "REQUEST_METHOD": self.command,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": user or "anonymous",
                    "REMOTE_ADDR": "127.0.0.1",
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                }
                proc = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True)
                head, _, payload = proc.stdout.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def check(self, header: str) -> str:
        if not header.startswith("Basic "):
            return ""
        try:
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return ""
        return user if self.users.get(user) == password else ""

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def start(self) -> GitServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- repositories on the server side ------------------------------------------------------

    def create(self, name: str, files: dict[str, str | bytes], *, branch: str = "main", config=()) -> Path:
        """A bare repository `name` (e.g. "private/app.git") whose `branch` holds `files`."""
        bare = self.root / name
        work = self.root / (".work-" + name.replace("/", "-"))
        run("git", "init", "--quiet", "--bare", "-b", branch, str(bare))
        run("git", "-C", str(bare), "config", "http.receivepack", "true")
        run("git", "init", "--quiet", "-b", branch, str(work))
        for rel, content in files.items():
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content if isinstance(content, bytes) else content.encode())
            if rel.endswith(".sh"):
                target.chmod(0o755)
        commit_in(work, "initial")
        for key, value in config:
            run("git", "-C", str(work), "config", key, value)
        run("git", "-C", str(work), "push", "--quiet", str(bare), f"{branch}:{branch}")
        return bare

    def head(self, name: str, branch: str) -> str:
        proc = run(
            "git", "--git-dir", str(self.root / name), "rev-parse", f"refs/heads/{branch}", check=False
        )
        return proc.stdout.strip() if proc.returncode == 0 else ""

    def show(self, name: str, rev: str, path: str) -> str:
        return run("git", "--git-dir", str(self.root / name), "show", f"{rev}:{path}").stdout

    def advance(self, name: str, branch: str, path: str, content: str) -> str:
        """Someone else pushes a commit onto `branch` (made on the server directly, no HTTP)."""
        bare = str(self.root / name)
        work = self.root / f".advance-{os.urandom(4).hex()}"
        run("git", "clone", "--quiet", "--branch", branch, bare, str(work))
        (work / path).write_text(content)
        commit_in(work, f"change {path}")
        run("git", "-C", str(work), "push", "--quiet", "origin", branch)
        return run("git", "-C", str(work), "rev-parse", "HEAD").stdout.strip()


def run(*cmd: str, check: bool = True, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@x"}
    env |= {"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "t@x"}
    return subprocess.run(cmd, capture_output=True, text=True, check=check, cwd=cwd, env=env)


def commit_in(work: Path, message: str) -> None:
    run("git", "-C", str(work), "add", "-A")
    run("git", "-C", str(work), "-c", "core.hooksPath=/dev/null", "commit", "--quiet", "-m", message)
