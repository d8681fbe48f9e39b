"""Where outbound webhooks may go. A destination's host is resolved and every address must pass
sandbox.netguard's rule (no private, loopback, link-local, metadata, multicast or reserved address); the
request then connects to the address that was checked (pinned), with the name kept for the Host header and
TLS (SNI and certificate), so a DNS answer that changes between the check and the connect cannot redirect
it. `HANGAR_WEBHOOKS_ALLOW_PRIVATE` (operator setting) opens networks for on-premises receivers: CIDRs, or
1 for every address."""

from dataclasses import dataclass
from urllib.parse import urlunsplit

from django.conf import settings

from sandbox import netguard

MAX_URL = 2_000


class DestinationRefused(ValueError):
    pass


@dataclass(frozen=True)
class Pinned:
    url: str  # the URL with the host replaced by the checked address
    host: str  # the Host header (name and explicit port)
    sni: str | None  # TLS server name (https only)


def url_check(url: str) -> str:
    """The URL if its shape is acceptable (http(s), a host, no credentials); addresses are checked at send."""
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise DestinationRefused("the URL must be at most 2000 characters")
    try:
        netguard.split_url(url)
    except ValueError as exc:
        raise DestinationRefused(str(exc)) from None
    return url.strip()


def resolve(url: str) -> Pinned:
    """Resolve and check the destination now; the caller connects to `Pinned.url`."""
    parts, host, port = netguard.split_url(url_check(url))
    allowed = netguard.networks(settings.HANGAR_WEBHOOKS_ALLOW_PRIVATE)
    try:
        infos = netguard.resolve(host, port, allowed, setting="HANGAR_WEBHOOKS_ALLOW_PRIVATE")
    except netguard.Refused as exc:
        raise DestinationRefused(str(exc)) from None
    except (OSError, UnicodeError) as exc:
        raise DestinationRefused(f"cannot resolve {host}") from exc
    address = sorted({str(info[4][0]) for info in infos})[0]

    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return Pinned(url=pinned, host=parts.netloc, sni=host if parts.scheme == "https" else None)
