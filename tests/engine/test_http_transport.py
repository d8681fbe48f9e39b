"""The direct adapter's HTTP client (hangar.engine.providers.http) against a raw socket server that
controls every byte: keep-alive per thread, a kept-alive connection the server dropped, lines cut
anywhere by the network, over-long lines, abort from another thread, and a plain-HTTP proxy."""

import http.server
import socket
import threading
import time
import urllib.request

import pytest

from hangar.engine.providers import http as transport
from hangar.engine.providers.limits import TooLarge


class RawServer:
    """Answers each request with `self.answer(request_number)`: a list of byte strings written one at a
    time (with a short pause between, so the client sees them as separate reads). `close_after` drops the
    connection after the answer without saying so (as a server timing out an idle keep-alive would)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.peers: list[tuple] = []
        self.answer = lambda n: [ok_body(b"data: hi\n\n")]
        self.close_after = False
        self.held: list[socket.socket] = []
        self.closed = threading.Event()  # set once the server has closed a connection (close_after)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket):
        reader = conn.makefile("rb")
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = reader.read(1)
                if not byte:
                    return
                head += byte
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            reader.read(length)
            self.peers.append(conn.getpeername())
            for piece in self.answer(len(self.peers)):
                if piece is None:  # hang: keep the connection open, send nothing more
                    self.held.append(conn)
                    return
                try:
                    conn.sendall(piece)
                except OSError:  # the client went away (it aborted)
                    return
                time.sleep(0.01)
            if self.close_after:
                conn.close()
                self.closed.set()
                return

    def stop(self):
        self.sock.close()


def ok_body(body: bytes, chunked: bool = False) -> bytes:
    if not chunked:
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (
            len(body),
            body,
        )
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@pytest.fixture
def server():
    s = RawServer()
    yield s
    s.stop()


def call(url: str) -> list[str]:
    response = transport.post(url, b"{}", {}, read_timeout=10)
    try:
        return list(response.lines())
    finally:
        response.close()


def test_a_thread_keeps_its_connection_alive_and_another_thread_has_its_own(server):
    assert call(server.url) == ["data: hi", ""]
    assert call(server.url) == ["data: hi", ""]
    other = threading.Thread(target=call, args=(server.url,))
    other.start()
    other.join()
    first, second, third = server.peers
    assert first == second and third != first


def test_a_kept_alive_connection_the_server_dropped_is_retried_once_on_a_new_one(server):
    server.close_after = True
    assert call(server.url) == ["data: hi", ""]
    assert server.closed.wait(10)  # the server has closed it; this thread still holds it as kept-alive
    assert call(server.url) == ["data: hi", ""]
    assert len(server.peers) == 2 and server.peers[0] != server.peers[1]


def test_lines_cut_anywhere_by_the_network_come_out_whole_with_crlf_removed(server):
    big = b"x" * 300_000  # a tool call's arguments: a whole file in one SSE line
    pieces = [b"data: one\r", b"\n\r\ndata: t", b"wo\n", b"\ndata: " + big[:100_000], big[100_000:], b"\n\n"]
    server.answer = lambda n: [ok_body(b"", chunked=True), *[chunk(p) for p in pieces], b"0\r\n\r\n"]
    assert call(server.url) == ["data: one", "", "data: two", "", "data: " + big.decode(), ""]
    assert call(server.url) == ["data: one", "", "data: two", "", "data: " + big.decode(), ""]
    assert len(set(server.peers)) == 1  # a chunked body read to its end keeps the connection too


def test_a_line_longer_than_the_limit_is_an_error_not_unbounded_memory(server, monkeypatch):
    monkeypatch.setattr(transport, "MAX_LINE", 1000)
    server.answer = lambda n: [
        ok_body(b"", chunked=True),
        *[chunk(b"y" * 600) for _ in range(3)],
        b"0\r\n\r\n",
    ]
    with pytest.raises(TooLarge, match="response too large: a line of the response exceeds 1000 bytes"):
        call(server.url)


def test_closing_from_another_thread_wakes_a_blocked_read_and_drops_the_connection(server):
    server.answer = lambda n: (
        [ok_body(b"", chunked=True), chunk(b"data: partial\n\n"), None]
        if n == 1
        else [ok_body(b"data: fine\n\n")]
    )
    response = transport.post(server.url, b"{}", {}, read_timeout=30)
    lines = response.lines()
    assert next(lines) == "data: partial"
    threading.Timer(0.2, response.close).start()  # what the abort watcher does
    started = time.monotonic()
    with pytest.raises(transport.HTTPError):
        list(lines)
    assert time.monotonic() - started < 5
    response.close()
    assert call(server.url) == ["data: fine", ""]
    assert server.peers[0] != server.peers[1]  # the aborted connection was not reused


def test_an_unreachable_origin_and_a_bad_url_are_errors(server):
    dead = socket.create_server(("127.0.0.1", 0))
    port = dead.getsockname()[1]
    dead.close()
    with pytest.raises(transport.HTTPError, match="failed"):
        call(f"http://127.0.0.1:{port}/v1/chat/completions")
    with pytest.raises(transport.HTTPError, match="not an http"):
        call("ftp://example.test/x")


class _Proxy(http.server.BaseHTTPRequestHandler):
    """A plain-HTTP forward proxy: the request line carries the absolute URL."""

    protocol_version = "HTTP/1.1"
    seen: list[str] = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        _Proxy.seen.append(self.path)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = urllib.request.Request(self.path, data=body, method="POST")
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request) as upstream:
            data = upstream.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_plain_http_proxy_from_the_environment_is_used_and_no_proxy_bypasses_it(server, monkeypatch):
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
        monkeypatch.setenv("no_proxy", "")
        monkeypatch.setattr(transport, "_origins", {})  # proxy settings are read once per URL
        assert call(server.url) == ["data: hi", ""]
        assert _Proxy.seen == [server.url]
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        monkeypatch.setattr(transport, "_origins", {})
        assert call(server.url) == ["data: hi", ""]
        assert _Proxy.seen == [server.url]  # straight to the server this time
    finally:
        proxy.shutdown()
