"""May the platform connect to this address on a tenant's behalf? One rule for every connection the host
makes to a destination a tenant chose: a model endpoint (hangar.netguard), an outbound webhook
(hangar.integrations.webhooks.netguard), a repository host (sandbox.gitops). Pure functions, no Django:
each caller passes in the networks its own operator setting opens.

An address is allowed when it lies in one of the caller's allowed networks, or when it is globally
routable: not loopback, link-local (the cloud metadata address), private, CGNAT (100.64.0.0/10),
multicast, reserved or unspecified, nor in the special-purpose ranges the egress proxy refuses
(sandbox/agent/netpolicy.py: NAT64, 6to4, documentation...). An IPv4-mapped IPv6 address is judged as the
IPv4 address it carries. A name is checked on every address it resolves to, and the socket then connects
to one of those very answers, so a DNS answer that changes between check and connect (rebinding) cannot
move the connection elsewhere.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from typing import TypeAlias
from urllib.parse import SplitResult, urlsplit

from sandbox.agent import netpolicy

Net = ipaddress.IPv4Network | ipaddress.IPv6Network
EVERYWHERE: tuple[Net, ...] = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
# One getaddrinfo answer: (family, type, proto, canonname, sockaddr).
AddrInfo: TypeAlias = tuple[
    socket.AddressFamily,
    socket.SocketKind,
    int,
    str,
    tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes],
]


class Refused(OSError):
    """A destination resolves to an address the caller does not allow. An OSError, so HTTP transports
    report it as a failed connection, never as a crash."""

    def __init__(self, message: str, *, host: str, address: str, reason: str):
        super().__init__(message)
        self.host, self.address, self.reason = host, address, reason


@functools.lru_cache(maxsize=16)
def _parse(spec: tuple[str, ...]) -> tuple[Net, ...]:
    return tuple(ipaddress.ip_network(item.strip(), strict=False) for item in spec if item.strip())


def networks(spec: bool | str | Iterable[object] | None) -> tuple[Net, ...]:
    """An operator setting as networks: a list of CIDRs or a comma-separated string of them; True (the
    older boolean settings' "allow private") means every address, False/None/"" none."""
    if spec is True:
        return EVERYWHERE
    if not spec:
        return ()

    return _parse(tuple(spec.split(",") if isinstance(spec, str) else (str(item) for item in spec)))


def refusal(address: object, allowed: tuple[Net, ...] = ()) -> str | None:
    """Why `address` may not be reached (a short class name: "loopback", "link-local"...), or None."""
    ip = ipaddress.ip_address(str(address).split("%", 1)[0])  # a scope id (fe80::1%eth0) is not the address
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:169.254.169.254 is 169.254.169.254
    if any(ip in net for net in allowed):
        return None
    for attr in (
        "is_unspecified",
        "is_loopback",
        "is_link_local",
        "is_site_local",  # fec0::/10: deprecated, still a LAN's own range where used
        "is_multicast",
        "is_private",
        "is_reserved",
    ):
        if getattr(ip, attr, False):  # IPv4 addresses have no is_site_local
            return attr.removeprefix("is_").replace("_", "-")
    if ip in _CGNAT:
        return "carrier-grade NAT"
    if not ip.is_global or netpolicy.refusal(ipaddress.ip_network(ip), []):
        return "not globally routable"
    return None


def resolve(
    host: str, port: int, allowed: tuple[Net, ...] = (), *, setting: str, what: str = ""
) -> Sequence[AddrInfo]:
    """getaddrinfo's answers for host:port, every one of them checked; Refused names the first that is not
    allowed and the operator `setting` that would allow it. A name that does not resolve raises
    socket.gaierror (or UnicodeError for a name IDNA rejects)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)

    for info in infos:
        address = str(info[4][0])
        reason = refusal(address, allowed)
        if reason:
            raise Refused(
                f"{what}{host}:{port} resolves to {address} ({reason}), which this server does not allow "
                f"({setting})",
                host=host,
                address=address,
                reason=reason,
            )
    return infos


def connect(
    infos: Sequence[AddrInfo], timeout: float | None = None, source_address: tuple[str, int] | None = None
) -> socket.socket:
    """A socket connected to the first of `resolve`'s checked answers that accepts."""
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
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
    raise error or OSError("no address to connect to")


def split_url(
    url: str, schemes: tuple[str, ...] = ("https", "http"), *, credentials_hint: str = ""
) -> tuple[SplitResult, str, int]:
    """(parts, host, port) of a URL with an allowed scheme, a host, no user info and a valid port (the
    scheme's default when absent); ValueError saying which of those is wrong. No network."""
    parts = urlsplit(url.strip())
    if parts.scheme not in schemes:
        raise ValueError(f"The scheme must be {' or '.join(schemes)}.")
    if "@" in parts.netloc:
        raise ValueError(f"Credentials do not go in the URL{credentials_hint}.")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        raise ValueError("The port is not a number between 0 and 65535.") from None
    if not host:
        raise ValueError("The URL has no host.")
    return parts, host, port or (443 if parts.scheme == "https" else 80)
