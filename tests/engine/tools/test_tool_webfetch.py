"""webfetch from the worker: allowed for a host on the project's allowlist that the test serves, refused
for loopback, metadata and private addresses (literal, behind a name, and behind a redirect), for hosts off
the allowlist and for projects without network access; capped at 5 MB.

The served host listens on the Docker bridge's gateway address (172.17.0.1, this machine's own address on
docker0, which every machine that runs the suite has): a private address the operator opens for the test
(HANGAR_EGRESS_ALLOW_PRIVATE=172.17.0.1/32), as an operator would for an on-premises host. Loopback
cannot stand in for it: no setting opens loopback."""

from __future__ import annotations

import http.server
import threading
import time
import tracemalloc
import zlib
from types import SimpleNamespace

import pytest

from hangar.engine.tools.base import ToolError
from hangar.engine.tools.execute import execute_tool
from hangar.engine.tools.registry import ALL
from tests.private_services import free_port

GATEWAY = "172.17.0.1"
PAGE = b"""<html><head><title>T</title><style>body{color:red}</style><script>var secret=1</script></head>
<body><h1>Release notes</h1><p>Version <b>2.0</b> adds <a href="https://example.org/docs">docs</a>.</p>
<ul><li>one</li><li>two</li></ul></body></html>"""


def zlib_gzip(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    return packer.compress(data) + packer.flush()


def gzip_bomb(megabytes: int) -> bytes:
    """`megabytes` MB of zeros, gzipped (about a thousandth of that), made a megabyte at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1024 * 1024)
    return b"".join([*(packer.compress(zeros) for _ in range(megabytes)), packer.flush()])


class Handler(http.server.BaseHTTPRequestHandler):
    routes: dict = {}

    def do_GET(self):
        if self.path == "/drip":  # headers at once, then one byte every 0.2 s
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(100000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.2)
            return
        status, headers, body = self.routes.get(self.path, (404, {}, b"missing"))
        self.send_response(status)
        for key, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that stops reading (the 5 MB cap) is expected here


@pytest.fixture(scope="module")
def site():
    port = free_port()
    server = Server((GATEWAY, port), Handler)
    loop_port = free_port()
    loopback = Server(("127.0.0.1", loop_port), Handler)
    Handler.routes = {
        "/page": (200, {"Content-Type": "text/html; charset=utf-8"}, PAGE),
        "/data.json": (200, {"Content-Type": "application/json"}, b'{"ok": true}'),
        "/moved": (302, {"Location": "/page"}, b""),
        "/to-loopback": (302, {"Location": f"http://127.0.0.1:{loop_port}/page"}, b""),
        "/to-metadata": (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
        "/huge": (200, {"Content-Type": "text/plain"}, b"x" * (5 * 1024 * 1024 + 1)),
        "/bomb": (200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, gzip_bomb(300)),
        "/small.gz": (
            200,
            {"Content-Type": "text/plain", "Content-Encoding": "gzip"},
            zlib_gzip(b"hello " * 100),
        ),
    }
    for s in (server, loopback):
        threading.Thread(target=s.serve_forever, daemon=True).start()
    yield SimpleNamespace(base=f"http://{GATEWAY}:{port}", port=port, loop_port=loop_port)
    for s in (server, loopback):
        s.shutdown()
        s.server_close()


@pytest.fixture
def fetcher(local, site, monkeypatch):
    monkeypatch.setenv("HANGAR_EGRESS_ALLOW_PRIVATE", f"{GATEWAY}/32")
    allowlist = [f"{GATEWAY}:{site.port}", f"127.0.0.1:{site.loop_port}", "169.254.169.254", "10.1.2.3"]
    allowlist.append(f"localhost:{site.loop_port}")
    project = SimpleNamespace(network_policy="allowlist", network_allowlist=allowlist)

    def fetch(url: str, **args):
        ctx = local.ctx(session=SimpleNamespace(project=project))
        return execute_tool(ALL["webfetch"], {"url": url, **args}, ctx)

    fetch.project = project
    return fetch


def test_an_allowlisted_page_arrives_as_markdown_without_its_scripts(fetcher, site, local):
    result = fetcher(f"{site.base}/page")
    assert "# Release notes" in result.output
    assert "Version **2.0** adds [docs](https://example.org/docs)." in result.output
    assert "- one\n- two" in result.output
    assert "secret" not in result.output and "color:red" not in result.output
    assert result.title == f"{site.base}/page (text/html; charset=utf-8)"
    assert local.asked("webfetch")[0]["patterns"] == [f"{site.base}/page"]


def test_text_and_html_formats_and_a_same_host_redirect(fetcher, site):
    text = fetcher(f"{site.base}/moved", format="text")
    assert text.output.splitlines()[:2] == ["T", "Release notes"] and "<h1>" not in text.output
    assert text.metadata["url"] == f"{site.base}/page"
    assert fetcher(f"{site.base}/page", format="html").output == PAGE.decode()
    assert fetcher(f"{site.base}/data.json").output == '{"ok": true}'


@pytest.mark.parametrize(
    "target",
    ["http://127.0.0.1:{loop}/page", "http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/"],
)
def test_loopback_metadata_and_private_addresses_are_refused_even_when_allowlisted(fetcher, site, target):
    with pytest.raises(ToolError, match="does not resolve to an address this server may reach"):
        fetcher(target.format(loop=site.loop_port))


def test_a_name_that_resolves_to_loopback_is_refused(fetcher, site):
    with pytest.raises(ToolError, match="does not resolve to an address this server may reach"):
        fetcher(f"http://localhost:{site.loop_port}/page")


@pytest.mark.parametrize("path", ["/to-loopback", "/to-metadata"])
def test_a_redirect_to_a_forbidden_address_is_refused(fetcher, site, path):
    with pytest.raises(ToolError, match="does not resolve to an address this server may reach"):
        fetcher(f"{site.base}{path}")


def test_hosts_off_the_allowlist_and_projects_without_network_are_refused(fetcher, site):
    with pytest.raises(ToolError, match=r"example\.org:443 is not on this project's network allowlist"):
        fetcher("https://example.org/")
    fetcher.project.network_policy = "none"
    with pytest.raises(ToolError, match="This project allows no network access"):
        fetcher(f"{site.base}/page")


def test_a_response_over_five_megabytes_is_refused(fetcher, site):
    with pytest.raises(ToolError, match=r"Response too large \(exceeds 5MB limit\)"):
        fetcher(f"{site.base}/huge")


def test_bad_urls_and_timeouts_get_clear_errors(fetcher):
    with pytest.raises(ToolError, match="URL must start with http:// or https://"):
        fetcher("ftp://example.org/")
    with pytest.raises(ToolError, match="Invalid timeout value"):
        fetcher("https://example.org/", timeout=-1)


def test_a_page_dripping_one_byte_at_a_time_is_cut_at_its_timeout(fetcher, site):
    """The deadline holds for every read, not only between 64 KB chunks."""
    outcome: dict = {}

    def run():
        try:
            fetcher(f"{site.base}/drip", timeout=2)
        except ToolError as exc:
            outcome["error"] = str(exc)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=20)
    assert not thread.is_alive(), "webfetch outlived its 2 s timeout by far"
    assert time.monotonic() - started < 8
    assert "timed out after 2 s" in outcome["error"]


def test_a_gzip_bomb_is_refused_without_being_expanded_in_memory(fetcher, site):
    assert fetcher(f"{site.base}/small.gz").output == "hello " * 100  # compressed pages still arrive
    tracemalloc.start()
    try:
        with pytest.raises(ToolError, match=r"Response too large \(exceeds 5MB limit\)"):
            fetcher(f"{site.base}/bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 * 1024 * 1024, f"{peak / 1e6:.0f} MB held while reading a 300 MB gzip bomb"
