"""Hangar egress proxy: the only way out of an allowlist sandbox. Stdlib only.

Runs in its own hardened container on two networks: the session's `internal` network (no route
out; the sandbox lives there) and an outbound bridge of its own (no neighbours). Serves HTTP
CONNECT (HTTPS and any TCP) and plain-HTTP forwarding (absolute-URI requests), and only to
allowlisted host:port pairs.

Config (environment):
  HANGAR_EGRESS_ALLOW  JSON list: "pypi.org", "*.github.com" (any subdomain), "host:8080",
                       "10.1.2.3:8080", "10.0.0.0/8:5000", "[fd00::1]:443". No port: 80 and 443.
  HANGAR_EGRESS_DENY   JSON list of addresses/CIDRs that are never reachable (the host's own).
  HANGAR_EGRESS_PRIVATE JSON list of CIDRs the operator opened (see netpolicy.py).
  HANGAR_EGRESS_PORT   listening port (3128).

Fail closed: the proxy resolves a name itself, checks every resolved address and connects to the
checked address (a DNS answer cannot change between check and connect: rebinding safe). The same
address policy (netpolicy.py) holds for name and IP/CIDR entries alike: an entry never widens it.
A CONNECT whose tunnel starts with a TLS ClientHello must name the CONNECT host in its SNI (no
fronting another name through an allowed one).
Logs one line per decision: method, host:port, verdict. Never paths, headers or bodies.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import threading

import netpolicy
import tlssni
from netpolicy import Rules

MAX_HEAD = 64 * 1024
MAX_CONNECTIONS = 64  # threads count against the container's pids limit
IDLE_TIMEOUT_S = 300
CONNECT_TIMEOUT_S = 10


def log(verdict: str, method: str, host: str, port: int) -> None:
    # host:port only: request paths and headers may carry tokens.
    sys.stderr.write(f"{verdict} {method} {host[:255]}:{port}\n")


class Handler:
    def __init__(self, rules: Rules, client: socket.socket) -> None:
        self.rules = rules
        self.client = client

    def respond(self, status: str) -> None:
        body = status.encode() + b"\n"
        try:
            self.client.sendall(
                b"HTTP/1.1 "
                + body[:-1]
                + b"\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                + b"Content-Length: %d\r\n\r\n" % len(body)
                + body
            )
        except OSError:
            pass

    def read_head(self) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            if len(data) > MAX_HEAD:
                return None
            chunk = self.client.recv(65536)
            if not chunk:
                return None
            data += chunk
        return data

    def handle(self) -> None:
        self.client.settimeout(30)
        head = self.read_head()
        if head is None:
            return self.respond("400 Bad Request")
        head, _, rest = head.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, version = lines[0].split(" ")
        except ValueError:
            return self.respond("400 Bad Request")
        method = method.upper()
        try:
            if method == "CONNECT":
                host, port = netpolicy.split_port(target)
                if port is None:
                    raise ValueError
            elif target.lower().startswith("http://"):
                authority, slash, path = target[7:].partition("/")
                authority = authority.rpartition("@")[2]  # never forward userinfo
                host, port = netpolicy.split_port(authority)
                port = port or 80
                path = slash + path
            else:
                raise ValueError
        except ValueError:
            return self.respond("400 Bad Request")
        addresses = self.rules.resolve(host, port)
        if not addresses:
            log("deny", method, host, port)
            return self.respond("403 Forbidden")
        upstream = self.connect(addresses, port)
        if upstream is None:
            log("fail", method, host, port)
            return self.respond("502 Bad Gateway")
        log("allow", method, host, port)
        with upstream:
            if method == "CONNECT":
                self.client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                rest, sni = self.tunnel_start(upstream, rest)
                if sni not in (tlssni.NOT_TLS, None) and sni != host.lower().strip("[]").rstrip("."):
                    log("deny-sni", method, host, port)
                    return None
            else:
                # The Host the upstream sees is the one checked (the request line's), never the client's:
                # a Host header naming another virtual host behind the same address must not ride along.
                dropped = ("proxy-", "connection:", "keep-alive:", "host:")
                headers = [h for h in lines[1:] if not h.lower().lstrip().startswith(dropped)]
                checked = f"Host: {authority}"
                out = [f"{method} {path} {version}", checked, *headers, "Connection: close", "", ""]
                upstream.sendall("\r\n".join(out).encode("latin-1"))
            if rest:
                upstream.sendall(rest)
            self.pump(upstream)
        return None

    def tunnel_start(self, upstream: socket.socket, rest: bytes) -> tuple[bytes, str | None]:
        """The tunnel's first client bytes and their SNI verdict (tlssni). A server that speaks first
        (SSH, SMTP) is not TLS: nothing to check, and waiting on the client would deadlock."""
        if not rest:
            ready, _, _ = select.select([self.client, upstream], [], [], IDLE_TIMEOUT_S)
            if self.client not in ready:
                return rest, tlssni.NOT_TLS
        return tlssni.first_flight(lambda: self.client.recv(65536), rest)

    @staticmethod
    def connect(addresses: list, port: int) -> socket.socket | None:
        for ip in addresses:  # connect to the address we checked, never re-resolve
            family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT_S)
            try:
                sock.connect((str(ip), port))
                return sock
            except OSError:
                sock.close()
        return None

    def pump(self, upstream: socket.socket) -> None:
        pair = {self.client: upstream, upstream: self.client}
        for s in pair:
            s.setblocking(True)
            s.settimeout(None)
        open_ = [self.client, upstream]
        while open_:
            ready, _, _ = select.select(open_, [], [], IDLE_TIMEOUT_S)
            if not ready:
                return
            for s in ready:
                data = s.recv(65536)
                if not data:
                    open_.remove(s)
                    try:
                        pair[s].shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    continue
                pair[s].sendall(data)


def serve(rules: Rules, port: int) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(128)
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def run(conn: socket.socket) -> None:
        try:
            with conn:
                Handler(rules, conn).handle()
        except OSError:
            pass
        finally:
            slots.release()

    while True:
        conn, _ = server.accept()
        if not slots.acquire(blocking=False):
            conn.close()  # over capacity: refuse rather than exhaust the pids limit
            continue
        try:
            threading.Thread(target=run, args=(conn,), daemon=True).start()
        except RuntimeError:
            slots.release()
            conn.close()


def main() -> None:
    rules = Rules(
        json.loads(os.environ.get("HANGAR_EGRESS_ALLOW", "[]")),
        json.loads(os.environ.get("HANGAR_EGRESS_DENY", "[]")),
        json.loads(os.environ.get("HANGAR_EGRESS_PRIVATE", "[]")),
    )
    serve(rules, int(os.environ.get("HANGAR_EGRESS_PORT", "3128")))


if __name__ == "__main__":
    main()
