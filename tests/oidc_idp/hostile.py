"""An identity provider gone bad, for the SSO hardening tests: a stdlib HTTP server on 127.0.0.1 (a thread of
the test process) whose discovery document is whatever the test says, and which, with `drip_s`, answers
every request one byte per `drip_s` seconds (status line and headers included), as a slow or hostile
provider would. It serves `jwks` at its jwks_uri, and counts (and keeps the paths of) the requests it was
sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HostileIdp:
    def __init__(
        self, discovery: Callable[[str], dict] | None = None, drip_s: float = 0.0, jwks: dict | None = None
    ):
        self.discovery = discovery or (lambda issuer: {"issuer": issuer})
        self.drip_s = drip_s
        self.jwks = jwks or {"keys": []}
        self.requests = 0
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        idp = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format, *args):
                pass

            def do_GET(self):
                with idp._lock:
                    idp.requests += 1
                    idp.paths.append(self.path)
                if "openid-configuration" in self.path:
                    body = json.dumps(idp.discovery(idp.issuer))
                else:
                    body = json.dumps(idp.jwks if "jwks" in self.path else {})
                raw = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}"
                ).encode()
                try:
                    if not idp.drip_s:
                        self.wfile.write(raw)
                        return
                    for index in range(len(raw)):
                        self.wfile.write(raw[index : index + 1])
                        self.wfile.flush()
                        if idp._stop.wait(idp.drip_s):
                            return
                except OSError:  # the client gave up
                    return

            do_POST = do_GET

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}/o"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.server.shutdown()
        self.server.server_close()


def discovery_with(**overrides: str) -> Callable[[str], dict]:
    """A well-formed discovery document for the issuer, with the given members replaced."""

    def document(issuer: str) -> dict:
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize/",
            "token_endpoint": f"{issuer}/token/",
            "jwks_uri": f"{issuer}/.well-known/jwks.json",
            "userinfo_endpoint": f"{issuer}/userinfo/",
            **overrides,
        }

    return document
