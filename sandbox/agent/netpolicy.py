"""Which addresses an egress allowlist may reach. Stdlib only: the egress proxy (in its container) and
the host (validation at the API and before a proxy starts) share this one definition.

Three classes of address, checked for every allowlist entry and every resolved address alike:
  never      loopback, link-local (the 169.254.169.254 cloud metadata address and its IPv6 forms),
             unspecified, multicast and reserved ranges: no setting opens them;
  operator   ranges the operator opened (HANGAR_EGRESS_ALLOW_PRIVATE="10.0.0.0/8,..."): reachable when
             an entry covers them, even if private or the host's own;
  refused    everything else that is not global: private, CGNAT, documentation, the Docker bridge
             ranges, plus the `deny` list (the host's own addresses and Docker's subnets, which may be
             public on some hosts).
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Sequence

Net = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_PORTS = (80, 443)  # what an allowlist entry without a port allows

NEVER = [
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "::/127",
        "fe80::/10",
        "ff00::/8",
        "fd00:ec2::/32",  # AWS's IPv6 metadata endpoint lives in fd00:ec2::254
    )
]
# Not global (IANA special-purpose registry): reachable only inside an operator range.
NON_GLOBAL = [
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "100.64.0.0/10",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "::ffff:0:0/96",
        "64:ff9b::/96",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "2002::/16",
        "fc00::/7",
    )
]


def parse_ranges(text: str) -> list[Net]:
    """The operator's setting: comma-separated CIDRs. A malformed item is an error (fail loudly at start)."""
    return [ipaddress.ip_network(item.strip(), strict=False) for item in text.split(",") if item.strip()]


def _overlaps(net: Net, ranges) -> bool:
    return any(net.version == r.version and net.overlaps(r) for r in ranges)


def _inside(net: Net, ranges) -> bool:
    return any(net.version == r.version and net.subnet_of(r) for r in ranges)


def _unmapped(net: Net) -> Net:
    if net.version == 6 and net.prefixlen >= 96 and net.network_address.ipv4_mapped is not None:
        return ipaddress.ip_network(f"{net.network_address.ipv4_mapped}/{net.prefixlen - 96}")
    return net


def refusal(net: Net, operator: list[Net], deny: Sequence[Net] = ()) -> str | None:
    """Why an IP or CIDR allowlist entry (or a resolved address, as a /32 or /128) must not be reached, or
    None when it may be."""
    net = _unmapped(net)
    if _overlaps(net, NEVER):
        return "loopback, link-local, metadata, unspecified or multicast addresses are never reachable"
    if _inside(net, operator):
        return None
    if _overlaps(net, deny):
        return "the host's own and Docker's addresses are not reachable unless the operator allows them"
    if _overlaps(net, NON_GLOBAL):
        return (
            "private addresses are reachable only in ranges the operator allows (HANGAR_EGRESS_ALLOW_PRIVATE)"
        )
    return None


def address_ok(ip, operator: list[Net], deny: Sequence[Net] = ()) -> bool:
    return refusal(ipaddress.ip_network(ip), operator, deny) is None


_HOST = re.compile(r"(\*\.)?([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


def split_port(entry: str) -> tuple[str, int | None]:
    """`host`, `host:port`, `[v6]` or `[v6]:port` (an unbracketed IPv6 has no port). ValueError if the port
    is not a number."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise ValueError("junk after ]")
        return host, int(rest[1:]) if rest else None
    if entry.count(":") == 1:
        host, port = entry.split(":")
        return host, int(port)
    return entry, None


def check_entry(raw: str, operator: list[Net], deny: Sequence[Net] = ()) -> str:
    """The normalised allowlist entry, or ValueError saying what is wrong with it."""
    entry = str(raw).strip().lower().rstrip(".")
    try:
        host, port = split_port(entry)
    except ValueError:
        raise ValueError("bad port") from None
    if port is not None and not 0 < port < 65536:
        raise ValueError("bad port")
    try:
        net = ipaddress.ip_network(host, strict=False)
    except ValueError:
        if not (0 < len(host) <= 253 and _HOST.fullmatch(host)):
            raise ValueError("not a hostname, IP or CIDR") from None
        return entry
    why = refusal(net, operator, deny)
    if why:
        raise ValueError(why)
    return entry


class Rules:
    """An allowlist as the egress proxy (and the worker's webfetch) applies it: which host:port pairs
    may be reached, and at which of their addresses (`resolve`: [] when refused)."""

    def __init__(self, allow: list[str], deny: list[str], private: Sequence[str] = ()) -> None:
        self.names: list[tuple[str, tuple[int, ...]]] = []  # (pattern, ports)
        self.nets: list[tuple[ipaddress._BaseNetwork, tuple[int, ...]]] = []
        for raw in allow:
            try:
                host, port = split_port(str(raw).strip().lower().rstrip("."))
            except ValueError:
                continue  # unparsable entry: allows nothing
            ports = (port,) if port else DEFAULT_PORTS
            try:
                self.nets.append((ipaddress.ip_network(host, strict=False), ports))
            except ValueError:
                if host:
                    self.names.append((host, ports))
        self.deny = [ipaddress.ip_network(d, strict=False) for d in deny]
        self.private = [ipaddress.ip_network(p, strict=False) for p in private]

    def name_allowed(self, host: str, port: int) -> bool:
        for pattern, ports in self.names:
            if port not in ports:
                continue
            if pattern.startswith("*.") and host.endswith(pattern[1:]) and len(host) > len(pattern) - 1:
                return True
            if host == pattern:
                return True
        return False

    def explicit(self, ip, port: int) -> bool:
        return any(ip.version == net.version and ip in net and port in ports for net, ports in self.nets)

    def address_ok(self, ip, port: int) -> bool:
        """May we connect to this (already resolved, or literal) address? The same answer whether a
        name or an IP/CIDR entry let it through."""
        return address_ok(ip, self.private, self.deny)

    def resolve(self, host: str, port: int) -> list:
        """Addresses to try for host:port, or [] when the request is refused."""
        host = host.lower().rstrip(".")
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:  # an IP literal must be covered by an IP/CIDR entry
            return [literal] if self.explicit(literal, port) and self.address_ok(literal, port) else []
        if not self.name_allowed(host, port):
            return []
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError:
            return []
        found = []
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
            if ip not in found and self.address_ok(ip, port):
                found.append(ip)
        return found
