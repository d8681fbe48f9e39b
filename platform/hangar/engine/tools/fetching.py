"""A GET from the worker on a tenant's behalf, under its project's network policy (webfetch).

The worker sits next to the platform's own services, so every hop is checked the way the sandbox's egress
proxy checks a connection (sandbox/agent/netpolicy.py `Rules`, the one definition both use): the host:port
must be on the project's allowlist, every address it resolves to must be reachable (never loopback,
link-local or metadata; private ranges and this machine's own addresses only where the operator opened
them, HANGAR_EGRESS_ALLOW_PRIVATE), and the request connects to the address that was checked (the name is
kept for the Host header and TLS), so a DNS answer that changes in between cannot move it. Redirects are
followed by hand, each hop checked again. The body is read under a byte cap and one deadline that every
socket operation keeps to (hangar.http_deadline: a page dripping a byte at a time is cut at the timeout,
not at its next 64 KB), and a compressed body (gzip, deflate; nothing else is asked for or accepted) is
expanded a bounded piece at a time, never past the cap: a small gzip bomb cannot fill the worker's memory.
"""

from __future__ import annotations

import ipaddress
import threading
import time
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlunsplit

import httpx

from hangar.http_deadline import Clock, httpx_transport
from sandbox import netguard
from sandbox.agent import netpolicy
from sandbox.egress import interface_addresses, operator_ranges

if TYPE_CHECKING:
    from hangar.projects.models import Project

MAX_BYTES = 5 * 1024 * 1024
MAX_REDIRECTS = 5
CHUNK = 64 * 1024
USER_AGENT = "Mozilla/5.0 (compatible; Hangar webfetch)"


class FetchRefused(Exception):
    """The request may not be made, or failed: the message is for the model (and the person)."""


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    encoding: str | None


def project_rules(project: Project) -> netpolicy.Rules:
    """The project's egress rules as the worker applies them; FetchRefused when it allows no network."""
    if project.network_policy != "allowlist":
        raise FetchRefused(
            "This project allows no network access (its network policy is 'none'): a project admin can "
            "allow hosts with a network allowlist."
        )
    return netpolicy.Rules(
        list(project.network_allowlist or []), deny=interface_addresses(), private=operator_ranges()
    )


def checked_address(rules: netpolicy.Rules, host: str, port: int) -> str:
    """The address to connect to for host:port, or FetchRefused saying why none may be used."""
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    listed = rules.explicit(literal, port) if literal else rules.name_allowed(host.lower().rstrip("."), port)
    if not listed:
        raise FetchRefused(f"{host}:{port} is not on this project's network allowlist.")
    addresses = rules.resolve(host, port)
    if not addresses:
        raise FetchRefused(
            f"{host}:{port} does not resolve to an address this server may reach (loopback, link-local, "
            "metadata and private addresses are refused)."
        )
    return str(addresses[0])


def fetch(url: str, rules: netpolicy.Rules, *, timeout_s: float, abort: threading.Event) -> Fetched:
    clock = Clock(timeout_s)
    deadline = clock.until
    for _hop in range(MAX_REDIRECTS + 1):
        try:
            parts, host, port = netguard.split_url(url)
        except ValueError as exc:
            raise FetchRefused(f"URL must start with http:// or https:// and name a host ({exc})") from None
        address = checked_address(rules, host, port)
        literal = f"[{address}]" if ":" in address else address
        pinned = urlunsplit((parts.scheme, f"{literal}:{port}", parts.path or "/", parts.query, ""))
        headers = {
            "Host": parts.netloc,
            "User-Agent": USER_AGENT,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
        }
        extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FetchRefused(f"Request timed out after {timeout_s:g} s")
        try:
            with (
                httpx.Client(
                    transport=httpx_transport(clock),
                    timeout=remaining,
                    follow_redirects=False,
                    trust_env=False,
                ) as client,
                client.stream("GET", pinned, headers=headers, extensions=extensions) as response,
            ):
                if response.is_redirect and "location" in response.headers:
                    url = urljoin(url, response.headers["location"])
                    continue
                if response.status_code >= 400:
                    raise FetchRefused(f"Request failed with status code: {response.status_code}")
                body = read_capped(response, deadline, abort, timeout_s)
                content_type = response.headers.get("content-type", "")
                return Fetched(url, response.status_code, content_type, body, response.charset_encoding)
        except httpx.TimeoutException:
            raise FetchRefused(f"Request timed out after {timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise FetchRefused(f"Request failed: {type(exc).__name__}: {str(exc)[:200]}") from None
    raise FetchRefused(f"Too many redirects (more than {MAX_REDIRECTS}).")


def _decoder(response: httpx.Response) -> Any:
    """A zlib decompressor for the body's content encoding, None for none; FetchRefused for any other."""
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return zlib.decompressobj(47)  # a gzip or zlib header, told apart by zlib
    raise FetchRefused(f"Unsupported content encoding: {encoding[:40]}")


def read_capped(response: httpx.Response, deadline: float, abort: threading.Event, timeout_s: float) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BYTES:
        raise FetchRefused("Response too large (exceeds 5MB limit)")
    decoder = _decoder(response)
    body = bytearray()
    for raw in response.iter_raw(CHUNK):
        data = raw
        while data:
            # Never more out of one call than the cap leaves room for (plus one byte, to know it is over).
            body += decoder.decompress(data, MAX_BYTES - len(body) + 1) if decoder else data
            if len(body) > MAX_BYTES:
                raise FetchRefused("Response too large (exceeds 5MB limit)")
            data = decoder.unconsumed_tail if decoder else b""
        if abort.is_set():
            raise FetchRefused("Request aborted")
        if time.monotonic() > deadline:
            raise FetchRefused(f"Request timed out after {timeout_s:g} s")
    if decoder:
        body += decoder.flush()
        if len(body) > MAX_BYTES:
            raise FetchRefused("Response too large (exceeds 5MB limit)")
    return bytes(body)
