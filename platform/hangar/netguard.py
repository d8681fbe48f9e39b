"""Where a model endpoint may point. A credential's `api_base` is chosen by a tenant, and the worker that
calls it sits next to the platform's own services (Postgres, Redis, the Docker bridge, the cloud's
metadata address): an endpoint that resolves to one of those would make the worker a request forger.

An address is allowed when it is globally routable, or when it falls in a network the operator lists in
HANGAR_MODEL_ALLOWED_NETWORKS (CIDRs: a self-hosted model on a private address, the tests' scripted server
on 127.0.0.1), or when it is the operator's own local model (HANGAR_LOCAL_MODEL_URL). The check runs on
the resolved addresses twice: when the credential is saved (a clear 400) and when a connection is opened,
on the very address the socket connects to, so a name that resolves elsewhere later (DNS rebinding)
cannot slip through between the two.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import urllib.parse

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class BlockedAddress(OSError):
    """The endpoint resolves to an address tenants may not reach. An OSError, so the transports report it
    as a failed connection (a ProviderError), never as a crash."""


@functools.lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in spec)


def _operator_endpoint() -> tuple[str, int] | None:
    url = getattr(settings, "HANGAR_LOCAL_MODEL_URL", "")
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    return (parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80))


def _why_blocked(address: IPAddress) -> str:
    for attr in (
        "is_loopback",
        "is_link_local",
        "is_private",
        "is_multicast",
        "is_reserved",
        "is_unspecified",
    ):
        if getattr(address, attr):
            return attr.removeprefix("is_").replace("_", "-")
    return "not globally routable"


def address_ok(address: str | IPAddress) -> bool:
    ip = ipaddress.ip_address(address) if isinstance(address, str) else address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if ip.is_global and not ip.is_multicast:
        return True
    return any(ip in net for net in _networks(tuple(settings.HANGAR_MODEL_ALLOWED_NETWORKS)))


def resolve(host: str, port: int) -> list[tuple]:
    """getaddrinfo's answers for host:port, every one of them checked; BlockedAddress names the first
    that is not allowed. The operator's own local model endpoint is exempt."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    if _operator_endpoint() == (host, port):
        return infos
    for info in infos:
        address = info[4][0]
        if not address_ok(address):
            ip = ipaddress.ip_address(address)
            raise BlockedAddress(
                f"the model endpoint {host}:{port} resolves to {address} ({_why_blocked(ip)}), which "
                "this server does not allow (HANGAR_MODEL_ALLOWED_NETWORKS)"
            )
    return infos


def connect(address: tuple[str, int], timeout: float | None = None, source_address=None) -> socket.socket:
    """socket.create_connection, on an address `resolve` checked: the name is resolved once, here, and
    the socket goes to that answer (http.client's `_create_connection` seam)."""
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in resolve(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not None:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
    raise error or OSError(f"no address for {host}:{port}")


def clean_api_base(value: str) -> str:
    """A credential's api_base as stored: an http(s) URL without credentials, query or fragment, whose
    host (when it resolves from here) is allowed. Raises ValueError saying what is wrong."""
    if not value:
        return ""
    parts = urllib.parse.urlsplit(value.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("Must be an http(s) URL.")
    if parts.username or parts.password:
        raise ValueError("Must not carry a user name or password: put the key in api_key.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError("The port is not a number between 0 and 65535.") from None
    try:
        resolve(parts.hostname, port)
    except BlockedAddress as exc:
        raise ValueError(str(exc)) from None
    except OSError:
        pass  # not resolvable from the web process (a name only the workers' network knows): checked at connect
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")
