"""Integration test rig: the engine's live parts (scripted LLM server, a real Celery worker on the test
queue) plus a local HTTP receiver that records what it is sent and answers with scripted status codes."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.engine.conftest import (  # noqa: F401  (fixtures)
    make_session,
    module_workers,
    script,
    scripted,
    scripted_credential,
    sessions_made,
    start_worker,
)
from tests.foundation_fixtures import _fresh_throttles, dave  # noqa: F401

# What the worker needs to deliver to the receiver on 127.0.0.1 quickly: the operator setting that allows a
# private destination, short backoff, few attempts.
HOOKS_WORKER_ENV = {
    "HANGAR_WEBHOOKS_ALLOW_PRIVATE": "1",
    "HANGAR_WEBHOOK_RETRY_BASE_S": "0.3",
    "HANGAR_WEBHOOK_MAX_ATTEMPTS": "3",
    "HANGAR_WEBHOOK_DISABLE_AFTER": "2",
}


class Receiver:
    """Records each POST (headers, raw body, arrival time); answers with `statuses` in turn (then 200)."""

    def __init__(self):
        self.received: list[dict] = []
        self.statuses: list[int] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver.lock:
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    receiver.received.append(
                        {
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body,
                            "at": time.monotonic(),
                            "status": status,
                            "path": self.path,
                        }
                    )
                reply = json.dumps({"ok": status < 300}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def of_type(self, event_type: str) -> list[dict]:
        return [r for r in self.received if json.loads(r["body"])["type"] == event_type]


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.server.shutdown()


@pytest.fixture
def hooks_worker(module_workers):  # noqa: F811
    return module_workers(env=HOOKS_WORKER_ENV)
