"""Webhooks, both ways, on this machine: a signed call in -> the session's run started, and a session
event -> delivered to the subscribed endpoint. p50 and p99 over --calls sessions.

    .venv/bin/python bench/webhooks.py [--calls 40]

Hangar runs as deployed (deploy/run-web.sh: Daphne; deploy/run-worker.sh: the Celery worker, threads)
against a database of its own (`hangar_bench_hooks`, migrated here), the scripted LLM server answering
each session with one short text turn, the Docker sandbox. The receiver is a local HTTP server in this
process (the worker runs with HANGAR_WEBHOOKS_ALLOW_PRIVATE=1 to reach it).

- in -> running: from just before the signed POST to /hooks/in/<key> to the first event the worker's run
  wrote (its assistant message, stamped by Postgres; a run that failed at once counts its error event,
  and the count of runs that errored is printed). Also the POST's own
  response time (verify, render, create the session, prompt: one transaction).
- event -> delivered: from the `session.idle` event's commit stamp to the signed POST arriving at the
  receiver (sink -> fan-out task -> delivery row -> delivery task -> HTTP).

Calls go one after another, --gap seconds apart. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "platform"), str(ROOT)]
os.environ.setdefault("HANGAR_BENCH_DB", "hangar_bench_hooks")

from agent_step import Scripted  # noqa: E402
from common import log  # noqa: E402
from hangar_side import Hangar  # noqa: E402  (the same deployed rig as the step bench)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Receiver:
    def __init__(self):
        self.arrivals: dict[str, float] = {}  # sessionID of a session.idle delivery -> arrival (wall clock)
        self.event = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                now = time.time()
                self.send_response(204)
                self.end_headers()
                message = json.loads(body)
                if message["type"] == "session.idle":
                    with receiver.event:
                        receiver.arrivals[message["data"]["sessionID"]] = now
                        receiver.event.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def wait(self, session_id: str, timeout: float = 60) -> float:
        with self.event:
            if not self.event.wait_for(lambda: session_id in self.arrivals, timeout):
                raise TimeoutError(f"no session.idle delivery for {session_id}")
            return self.arrivals[session_id]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.5)
    args = parser.parse_args()
    os.environ["HANGAR_WEBHOOKS_ALLOW_PRIVATE"] = "1"  # the worker (inherits) and this process
    os.environ["HANGAR_WEBHOOK_RETRY_BASE_S"] = "1"
    scripted = Scripted()
    receiver = Receiver()
    hangar = Hangar(scripted)
    try:
        result = run(hangar, scripted, receiver, args)
    finally:
        stop(hangar)
        scripted.stop()
    print(json.dumps(result))


def stop(hangar: Hangar) -> None:
    """Hangar.stop without its pool drain: pooled container names are shared by every checkout on this
    Docker engine, so only the pooled containers whose volume lives under this checkout's sandbox root go."""
    from sandbox import WarmPool, volumes

    hangar._remove_sandboxes = lambda: None
    hangar.stop()
    from hangar.conversations.models import Session
    from sandbox import DockerSandboxes

    sandboxes = DockerSandboxes()
    for session_id in Session.objects.filter(project=hangar.project).values_list("pk", flat=True):
        try:
            sandboxes.destroy(session_id)
        except Exception as exc:
            log(f"could not remove the sandbox of {session_id}: {exc!r}")
    pool, mine = WarmPool(0), set(volumes.list_volumes())
    for name in pool.available():
        if name.rsplit("-", 1)[-1] in mine:
            pool._remove_unclaimed(name)


def run(hangar: Hangar, scripted: Scripted, receiver: Receiver, args) -> dict:
    from hangar.accounts.actors import system_actor
    from hangar.conversations.models import Event
    from hangar.integrations.webhooks import signing
    from hangar.integrations.webhooks.services import endpoint_create, trigger_create

    script_id = scripted.load([[{"text": "Looked at it."}]])
    actor = system_actor(hangar.project.org_id, "bench")
    trigger, secret = trigger_create(
        actor=actor,
        project=hangar.project,
        name=f"bench-{uuid.uuid4().hex[:6]}",
        prompt_template="CI failed on {{ body.repo }}: {{ body.job.name }}",
        model=f"scripted/{script_id}",
    )
    _endpoint, _ = endpoint_create(
        actor=actor,
        org=hangar.project.org,
        url=receiver.url(),
        event_types=["session.idle"],
        project=hangar.project,
    )
    url = f"http://127.0.0.1:{hangar.port}/hooks/in/{trigger.key}"
    to_running, post_ms, to_delivered, errors = [], [], [], 0
    with httpx.Client(timeout=30) as client:
        for i in range(args.calls + 1):  # the first is a warm-up
            body = json.dumps({"repo": "bench/app", "job": {"name": f"job-{i}"}})
            headers = {
                **signing.sign_headers(secret, signing.new_message_id(), body),
                "content-type": "application/json",
            }
            started = time.time()
            response = client.post(url, content=body, headers=headers)
            posted = time.time()
            response.raise_for_status()
            session_id = response.json()["session"]
            arrived = receiver.wait(session_id)
            events = list(Event.objects.filter(session_id=session_id).order_by("seq"))
            # The prompt's own events end with session.status busy (web); the next is the worker's.
            busy = next(e for e in events if e.type == "session.status")
            first_run = next(e for e in events if e.seq > busy.seq)
            errors += first_run.type == "session.error" or any(e.type == "session.error" for e in events)
            idle = next(e for e in events if e.type == "session.idle")
            if i == 0:
                continue
            post_ms.append((posted - started) * 1000)
            to_running.append((first_run.created_at.timestamp() - started) * 1000)
            to_delivered.append((arrived - idle.created_at.timestamp()) * 1000)
            time.sleep(args.gap)
    figures = {
        "calls": args.calls,
        "runs_that_errored": errors,
        "in_post_ms": {"p50": percentile(post_ms, 0.5), "p99": percentile(post_ms, 0.99)},
        "in_to_running_ms": {"p50": percentile(to_running, 0.5), "p99": percentile(to_running, 0.99)},
        "event_to_delivered_ms": {
            "p50": percentile(to_delivered, 0.5),
            "p99": percentile(to_delivered, 0.99),
        },
    }
    log(json.dumps(figures, indent=1))
    return {
        k: ({m: round(v, 1) for m, v in x.items()} if isinstance(x, dict) else x) for k, x in figures.items()
    }


if __name__ == "__main__":
    main()
