"""Where outbound webhooks may go. A destination's host is resolved and every address must be public
(no private, loopback, link-local, metadata, multicast or reserved address); the request then connects to
the address that was checked (pinned), with the name kept for the Host header and TLS (SNI and
certificate), so a DNS answer that changes between the check and the connect cannot redirect it.
`HANGAR_WEBHOOKS_ALLOW_PRIVATE` (operator setting) lifts the address rule, for on-premises receivers."""

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

MAX_URL = 2_000


class DestinationRefused(ValueError):
    pass


@dataclass(frozen=True)
class Pinned:
    url: str  # the URL with the host replaced by the checked address
    host: str  # the Host header (name and explicit port)
    sni: str | None  # TLS server name (https only)


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def url_check(url: str) -> str:
    """The URL if its shape is acceptable (http(s), a host, no credentials); addresses are checked at send."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise DestinationRefused("the URL must be at most 2000 characters")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DestinationRefused("the URL must be http(s) with a host")
    if parts.username or parts.password:
        raise DestinationRefused("the URL must not carry credentials")
    try:
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        raise DestinationRefused("the URL's port is invalid") from None
    return url.strip()


def resolve(url: str) -> Pinned:
    """Resolve and check the destination now; the caller connects to `Pinned.url`."""
    parts = urlsplit(url_check(url))
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise DestinationRefused(f"cannot resolve {parts.hostname}") from exc
    addresses = sorted({info[4][0] for info in infos})
    if not addresses:
        raise DestinationRefused(f"cannot resolve {parts.hostname}")
    if not settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE:
        refused = [a for a in addresses if not _public(a)]
        if refused:
            raise DestinationRefused(f"{parts.hostname} resolves to a non-public address ({refused[0]})")
    address = addresses[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    host = parts.netloc.rsplit("@", 1)[-1]
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return Pinned(url=pinned, host=host, sni=parts.hostname if parts.scheme == "https" else None)
