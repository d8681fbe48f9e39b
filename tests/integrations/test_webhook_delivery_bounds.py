"""An outbound delivery cannot take the worker down or hold it: the answer is read only up to what the log
keeps, an attempt has a total deadline (an endpoint answering one byte a second is cut), no database
connection is held while it waits on the network, an org has a capped number of endpoints and of deliveries
in flight, and deliveries run on their own queue, so a slow endpoint delays neither an agent step nor
another org's deliveries. Against real local HTTP servers that misbehave on purpose."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from django.db import connection

from hangar.conversations.services import session_create
from hangar.engine.services import session_prompt
from hangar.integrations.queue import WEBHOOKS_QUEUE
from hangar.integrations.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from hangar.integrations.webhooks.outbound import MAX_RESPONSE_LOGGED, deliveries_create, delivery_attempt
from tests.engine.conftest import QUEUE, text_of, text_prompt, wait_for, wait_idle
from tests.faults.checks import wait_workers_ready
from tests.integrations.conftest import HOOKS_WORKER_ENV
from tests.integrations.test_webhooks_outbound import create_endpoint

pytestmark = pytest.mark.django_db(transaction=True)


class BadServer:
    """A raw HTTP server on 127.0.0.1. `mode`: "drip" answers one byte a second for ever; "huge" sends a
    64 MiB body as fast as it is read (counting what it managed to send); "hold" answers 200 once
    `release` is set."""

    def __init__(self, mode: str):
        self.mode = mode
        self.sent = 0
        self.requests = 0
        self.holding = threading.Event()
        self.done = threading.Event()  # a connection's handler has ended
        self.release = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            self.requests += 1
            if self.mode == "drip":
                for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n" + b"x" * 100000:
                    conn.sendall(bytes([byte]))
                    time.sleep(1)
            elif self.mode == "huge":
                size = 64 * 1024 * 1024
                conn.sendall(f"HTTP/1.1 200 OK\r\ncontent-length: {size}\r\n\r\n".encode())
                chunk = b"y" * 65536
                while self.sent < size:
                    conn.sendall(chunk)
                    self.sent += len(chunk)
            else:
                self.holding.set()
                self.release.wait(30)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        except OSError:
            pass
        finally:
            conn.close()
            self.done.set()

    def close(self) -> None:
        self.release.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept(): a closed socket alone does not
        except OSError:
            pass
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.fixture
def bad_server():
    made: list[BadServer] = []

    def make(mode: str) -> BadServer:
        made.append(BadServer(mode))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def allow_private(settings):
    settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE = True


def one_delivery(api, persona, url: str) -> int:
    create_endpoint(api, persona, url, ["session.created"])
    session = session_create(actor=persona.actor, project=persona.project)
    [delivery_id] = deliveries_create(session.pk, list(session.events.values_list("id", flat=True)))
    return delivery_id


def attempt_in_thread(delivery_id: int) -> threading.Thread:
    def run() -> None:
        try:
            delivery_attempt(delivery_id)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_it_reads_a_huge_answer_only_up_to_what_the_log_keeps(alice, api, allow_private, bad_server):
    server = bad_server("huge")
    delivery_id = one_delivery(api, alice, server.url)
    delivery_attempt(delivery_id)
    attempt = WebhookAttempt.objects.get(delivery_id=delivery_id)
    assert attempt.response_status == 200
    assert 0 < len(attempt.response_body) <= MAX_RESPONSE_LOGGED
    assert server.done.wait(10), "the server is still sending"
    assert server.sent < 16 * 1024 * 1024, f"{server.sent} bytes of the 64 MiB body were read"


def test_an_endpoint_answering_one_byte_a_second_is_cut_at_the_attempt_deadline(
    alice, api, allow_private, bad_server, settings
):
    settings.HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S = 2.0
    server = bad_server("drip")
    delivery_id = one_delivery(api, alice, server.url)
    started = time.monotonic()
    thread = attempt_in_thread(delivery_id)
    thread.join(timeout=20)
    assert not thread.is_alive(), "the attempt outlived its deadline by far"
    assert time.monotonic() - started < 10
    attempt = WebhookAttempt.objects.get(delivery_id=delivery_id)
    assert "deadline" in attempt.error and attempt.response_status is None
    assert WebhookDelivery.objects.get(pk=delivery_id).status == "pending"  # retried later, as any failure


def test_no_database_connection_is_held_while_an_attempt_waits_on_the_network(
    alice, api, allow_private, bad_server
):
    server = bad_server("hold")
    delivery_id = one_delivery(api, alice, server.url)

    def backends() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            return cursor.fetchone()[0]

    before = backends()
    thread = attempt_in_thread(delivery_id)
    assert server.holding.wait(15), "the attempt never reached the endpoint"
    during = backends()
    server.release.set()
    thread.join(timeout=15)
    assert during == before, "the delivering thread kept its database connection across the call"
    assert WebhookDelivery.objects.get(pk=delivery_id).status == "succeeded"


def test_an_org_has_at_most_the_operator_s_number_of_endpoints(alice, charlie, api, allow_private, settings):
    settings.HANGAR_WEBHOOK_MAX_ENDPOINTS_PER_ORG = 2
    for n in range(2):
        create_endpoint(api, alice, f"http://127.0.0.1:9/hook{n}", ["session.idle"])
    response = api(alice).post(
        "/api/orgs/acme/webhooks/endpoints/",
        {"url": "http://127.0.0.1:9/hook3", "event_types": ["session.idle"]},
        format="json",
    )
    assert response.status_code == 400
    assert "at most 2" in " ".join(response.json()["error"]["fields"]["endpoints"])
    create_endpoint(api, charlie, "http://127.0.0.1:9/hook", ["session.idle"])  # another org's own count


def test_a_slow_endpoint_delays_neither_an_agent_step_nor_another_org_s_deliveries(
    alice, charlie, api, receiver, allow_private, bad_server, script, make_session, start_worker
):
    env = {**HOOKS_WORKER_ENV, "HANGAR_WEBHOOK_ATTEMPT_DEADLINE_S": "60", "HANGAR_WEBHOOK_ORG_IN_FLIGHT": "1"}
    start_worker(env=env, concurrency=3, queues=[QUEUE])
    start_worker(env=env, concurrency=3, queues=[WEBHOOKS_QUEUE])
    wait_workers_ready(2)  # under load a worker takes a while to start: time the delivery, not that
    slow = bad_server("drip")
    create_endpoint(api, alice, slow.url, ["session.created"])
    create_endpoint(api, charlie, receiver.url, ["session.created"])
    for _ in range(6):  # six deliveries to the endpoint that answers one byte a second
        session_create(actor=alice.actor, project=alice.project)
    wait_for(lambda: slow.requests >= 1, what="the slow endpoint reached")

    session = make_session(alice, script.load([[{"text": "stepped"}]]))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("go"))
    assert text_of(wait_idle(session, timeout=45)) == "stepped"

    session_create(actor=charlie.actor, project=charlie.project)
    wait_for(lambda: receiver.of_type("session.created"), timeout=30, what="charlie's delivery")
    assert slow.requests == 1  # alice's org holds one delivery in flight; the rest wait their turn
    slow.close()  # its attempt ends now; the deliveries that waited their turn are tried (and fail)
    # The deliveries that waited their turn are tried, fail, and the endpoint is disabled (as before).
    wait_for(lambda: not WebhookEndpoint.objects.get(org=alice.org).enabled, what="the endpoint disabled")
