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
from collections.abc import Sequence

Net = ipaddress.IPv4Network | ipaddress.IPv6Network

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
