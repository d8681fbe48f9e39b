"""HTTP/1.1 for the direct adapter: the standard library's http.client, one keep-alive connection per
thread and origin.

Why not httpx: per model call its request and response models, the h11 state machine fed event by event
and its pool's bookkeeping were the largest single item of an agent step's worker CPU after the database
(bench/step_cpu.py --profile shows the split), and its shared pool scans every connection under a lock on
each request and close, which a worker streaming many sessions pays for once per session. A worker thread
runs one session's steps one after another, so a connection per thread and origin is all the pooling a
worker needs, with nothing shared between threads; http.client parses the status line and headers in C
and the body is read a network chunk at a time.

Proxies come from the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), as httpx took them, read once per
URL; TLS uses the system's CA store. Every connection goes to an address netguard allowed, resolved once
at connect time; the body is read under the caps of limits.py.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator

from hangar import netguard
from hangar.engine.providers.limits import bounded_lines

CONNECT_TIMEOUT_S = 30.0
READ_CHUNK = 65536
MAX_LINE = 16 * 1024 * 1024  # one SSE line (a tool call's arguments can be a whole file)
MAX_BODY = 64 * 1024 * 1024  # a body read as lines when the caller names no cap
MAX_ERROR_BODY = 1024 * 1024
USER_AGENT = "hangar/0.1"

_local = threading.local()
_tls: ssl.SSLContext | None = None
_tls_lock = threading.Lock()


class HTTPError(Exception):
    """Nothing usable came back: the connection failed, timed out, or broke mid-body."""


def _tls_context() -> ssl.SSLContext:
    global _tls
    if _tls is None:
        with _tls_lock:
            if _tls is None:
                _tls = ssl.create_default_context()  # loads the CA store from disk: once per process
    return _tls


def _proxy_for(scheme: str, host: str) -> tuple[str, int] | None:
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(host):
        return None
    parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    return parts.hostname or "", parts.port or 80


# (scheme, host, port, proxy): the connections one thread keeps alive, by where they go.
OriginKey = tuple[str, str, int, tuple[str, int] | None]


class _Origin:
    """Where a URL's requests go: the connection to open, and the request target to send."""

    def __init__(self, url: str):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HTTPError(f"not an http(s) URL: {url!r}")
        self.scheme, self.host = parts.scheme, parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.proxy = _proxy_for(self.scheme, self.host)
        self.key = (self.scheme, self.host, self.port, self.proxy)
        path = parts.path or "/"
        self.target = path + (f"?{parts.query}" if parts.query else "")
        if self.proxy and self.scheme == "http":
            self.target = url  # a plain-HTTP proxy takes the absolute URL; HTTPS goes through a tunnel

    def connect(self, read_timeout: float) -> http.client.HTTPConnection:
        host, port = self.proxy or (self.host, self.port)
        conn: http.client.HTTPConnection
        if self.scheme == "https":
            conn = http.client.HTTPSConnection(host, port, timeout=CONNECT_TIMEOUT_S, context=_tls_context())
            if self.proxy:
                conn.set_tunnel(self.host, self.port)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=CONNECT_TIMEOUT_S)
        if self.proxy:
            netguard.resolve(self.host, self.port)  # the proxy connects; the name is checked as it stands now
        else:
            # Resolved, checked and connected to in one place. http.client's own seam for how its socket
            # is opened; private, so typeshed does not declare it.
            conn._create_connection = netguard.connect  # type: ignore[attr-defined]
        conn.connect()
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock.settimeout(read_timeout)
        return conn


class Response:
    """An answer being read. `close()` on the thread that sent the request gives the connection back for
    that thread's next request when the body was read to its end, else closes it. From another thread (the
    abort watcher) it shuts the socket down, which wakes a read blocked on it, and leaves the rest to the
    owner's own close (http.client objects are not safe to close under a reading thread)."""

    def __init__(self, conn: http.client.HTTPConnection, answer: http.client.HTTPResponse, key: OriginKey):
        self._conn, self._answer, self._key = conn, answer, key
        self._owner, self._pool = threading.current_thread(), _connections()
        self._lock = threading.Lock()
        self._done = self._closed = self._shut = False
        self.status, self.reason = answer.status, answer.reason
        self.headers = {name.lower(): value for name, value in answer.getheaders()}

    def read(self, limit: int | None = None) -> bytes:
        try:
            data = self._answer.read(limit) if limit else self._answer.read()
        except (OSError, ValueError, http.client.HTTPException) as exc:
            raise HTTPError(f"reading the response failed: {exc!r}") from exc
        self._done = limit is None or not self._answer.fp
        return data

    def lines(self, *, max_total: int | None = None) -> Iterator[str]:
        """The body's lines, decoded, without their line ends; read to the body's end. A line over
        MAX_LINE or a body over `max_total` bytes is a limits.TooLarge (a ProviderError)."""
        read1 = self._answer.read1

        def chunks() -> Iterator[bytes]:
            while True:
                try:
                    data = read1(READ_CHUNK)
                except (
                    OSError,
                    ValueError,
                    http.client.HTTPException,
                ) as exc:  # ValueError: a bad chunk size
                    raise HTTPError(f"the response broke off: {exc!r}") from exc
                if not data:
                    self._done = True
                    return
                yield data

        yield from bounded_lines(chunks(), max_line=MAX_LINE, max_total=max_total or MAX_BODY)

    def close(self) -> None:
        if threading.current_thread() is not self._owner:
            self._shutdown()
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
        keep = self._done and not self._shut and not self._answer.will_close and self._key not in self._pool
        if keep:
            # Read to its end, but http.client marks a Content-Length body finished only when a read
            # asks for more than it has left: say so, or the connection refuses its next request.
            self._answer.close()
            self._pool[self._key] = self._conn
            return
        self._conn.close()

    def _shutdown(self) -> None:
        with self._lock:
            if self._closed or self._shut:
                return
            self._shut = True
            sock = self._conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _connections() -> dict[OriginKey, http.client.HTTPConnection]:
    pool = getattr(_local, "connections", None)
    if pool is None:
        pool = _local.connections = {}
    return pool


_origins: dict[str, _Origin] = {}


def _origin(url: str) -> _Origin:
    """Parsed once per URL: reading the proxy settings walks the whole environment on every call."""

    origin = _origins.get(url)
    if origin is None:
        if len(_origins) > 1000:
            _origins.clear()
        origin = _origins[url] = _Origin(url)
    return origin


def post(url: str, body: bytes, headers: dict[str, str], *, read_timeout: float) -> Response:
    """Send a POST and return once the status line and headers are in. A kept-alive connection the
    server has closed meanwhile is retried once on a new one (the request never reached it)."""
    origin = _origin(url)
    headers = {"User-Agent": USER_AGENT, "Content-Type": "application/json", **headers}
    conn = _connections().pop(origin.key, None)  # held by this request until its response is closed
    if conn is not None and conn.sock is None:
        conn = None
    for fresh in (False, True) if conn is not None else (True,):
        try:
            if fresh or conn is None:
                conn = origin.connect(read_timeout)
            else:
                conn.sock.settimeout(read_timeout)
            conn.request("POST", origin.target, body=body, headers=headers)
            return Response(conn, conn.getresponse(), origin.key)
        except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as exc:
            if conn is not None:  # None: the reset came while connecting
                conn.close()
            if fresh:
                raise HTTPError(f"POST {url} failed: {exc!r}") from exc
        except (OSError, http.client.HTTPException) as exc:
            if conn is not None:
                conn.close()
            raise HTTPError(f"POST {url} failed: {exc!r}") from exc
    raise AssertionError("unreachable")
