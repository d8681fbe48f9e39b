"""An upload's size is checked while it streams, not after the web process has spooled it whole: a
request that declares more than the cap is answered 413 at once, and one whose body grows past the cap
(chunked, no length) is cut off there. Against the web server as deployed (Daphne, deploy/run-web.sh)."""

import select
import socket

import pytest
from django.conf import settings

from hangar.conversations.models import Session
from tests.opencode.live import Daphne

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

BOUNDARY = "hangar-test-boundary"


@pytest.fixture(scope="module")
def web(django_db_setup, django_db_blocker):
    """The web server as deployed (deploy/run-web.sh: Daphne)."""
    server = Daphne(settings.DATABASES["default"]["NAME"])
    yield server
    server.stop()


def _session(api, alice) -> str:
    base = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/"
    return Session.objects.get(pk=api(alice).post(base, {"title": "t"}, format="json").json()["id"]).pk


def _answer(sock: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _start(web, alice, session_id: str, length_header: str) -> socket.socket:
    path = f"/api/orgs/acme/projects/{alice.project.pk}/sessions/{session_id}/workspace/upload/"
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=20)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {alice.token}\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{length_header}\r\n\r\n"
    )
    part = f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
    body = part.encode() + b"x" * 1024
    if "chunked" in length_header:
        body = b"%x\r\n%s\r\n" % (len(body), body)
    sock.sendall(head.encode() + body)
    return sock


def test_an_upload_declaring_more_than_the_cap_is_refused_before_its_body_arrives(web, api, alice):
    session_id = _session(api, alice)
    # 10 GB declared, 1 KB sent: a server that spools first waits for the rest (the socket times out).
    with _start(web, alice, session_id, f"Content-Length: {10 * 2**30}") as sock:
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


def test_a_chunked_upload_is_cut_off_once_it_passes_the_cap(web, api, alice):
    session_id = _session(api, alice)
    with _start(web, alice, session_id, "Transfer-Encoding: chunked") as sock:
        sent, answer = 0, b""
        chunk = b"%x\r\n%s\r\n" % (2**20, b"y" * 2**20)
        try:
            while sent < 200 * 2**20 and not answer:  # far past the 25 MB cap, unless answered first
                sock.sendall(chunk)
                sent += 2**20
                if select.select([sock], [], [], 0)[0]:
                    answer = _answer(sock)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = answer or _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 64 * 2**20


def test_an_upload_under_the_cap_still_goes_through_the_capped_server(web, api, alice, sessions_made):
    import httpx

    session_id = _session(api, alice)
    sessions_made.append(session_id)
    url = f"{web.url}/api/orgs/acme/projects/{alice.project.pk}/sessions/{session_id}/workspace/upload/"
    response = httpx.post(
        url,
        headers={"Authorization": f"Bearer {alice.token}"},
        files={"file": ("small.txt", b"small\n")},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    assert response.json()["written"] == ["small.txt"]
