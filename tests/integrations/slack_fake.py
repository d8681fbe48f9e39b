"""A local server speaking Slack's Web API wire format (POST /api/<method>, form or JSON bodies, bearer
token), for slack-sdk's WebClient pointed at it with `base_url`. It records every call."""

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

TEAM = {"id": "T0ACME", "name": "Acme Slack"}
BOT_USER = "UBOTHANGAR"
BOT_TOKEN = "xoxb-test-token-0001"


class FakeSlack:
    def __init__(self):
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        self._ts = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode()
                if self.headers.get("content-type", "").startswith("application/json"):
                    args = json.loads(raw or "{}")
                else:
                    args = dict(parse_qsl(raw))
                method = self.path.rsplit("/", 1)[-1]
                reply = fake.answer(method, args, self.headers.get("authorization", ""))
                body = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json; charset=utf-8")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/"

    def next_ts(self) -> str:
        return f"1800000000.{next(self._ts):06d}"

    def answer(self, method: str, args: dict, auth: str) -> dict:
        with self.lock:
            self.calls.append({"method": method, "args": args, "auth": auth})
        if method == "oauth.v2.access":
            if args.get("code") != "good-code":
                return {"ok": False, "error": "invalid_code"}
            return {
                "ok": True,
                "access_token": BOT_TOKEN,
                "token_type": "bot",
                "scope": "chat:write,commands,app_mentions:read",
                "bot_user_id": BOT_USER,
                "app_id": "A0HANGAR",
                "team": TEAM,
                "authed_user": {"id": "UALICE"},
            }
        if auth != f"Bearer {BOT_TOKEN}":
            return {"ok": False, "error": "invalid_auth"}
        if method == "chat.postMessage":
            return {"ok": True, "channel": args.get("channel"), "ts": self.next_ts(), "message": args}
        if method == "chat.update":
            return {
                "ok": True,
                "channel": args.get("channel"),
                "ts": args.get("ts"),
                "text": args.get("text"),
            }
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": self.next_ts()}
        if method == "auth.test":
            return {"ok": True, "user_id": BOT_USER, "team_id": TEAM["id"], "bot_id": "B0HANGAR"}
        return {"ok": True}

    def of(self, method: str) -> list[dict]:
        with self.lock:
            return [c["args"] for c in self.calls if c["method"] == method]

    def stop(self) -> None:
        self.server.shutdown()
