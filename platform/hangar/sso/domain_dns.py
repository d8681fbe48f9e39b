"""The DNS look-up that proves an org controls an email domain, behind an interface (`TxtResolver`) so the
proof does not depend on where the answers come from. The real one is dnspython, asking the nameservers the
operator names in HANGAR_SSO_DNS_NAMESERVERS (host:port; the tests point it at a DNS server of their own on
127.0.0.1) or, when unset, the system's (/etc/resolv.conf), within HANGAR_SSO_TIMEOUT_S."""

from __future__ import annotations

from typing import Protocol

import dns.exception
import dns.resolver
from django.conf import settings

CHALLENGE_PREFIX = "_hangar-challenge."
VALUE_PREFIX = "hangar-domain-verification="


class DnsUnavailable(Exception):
    """The resolver did not answer (timeout, no nameserver): nothing is proven or disproven."""


class TxtResolver(Protocol):
    def txt(self, name: str) -> list[str]:
        """The TXT strings at `name` (each record's character-strings joined); [] when there are none."""
        ...


class DnsPythonResolver:
    def __init__(self, nameservers: list[str], lifetime: float):
        self.resolver = dns.resolver.Resolver(configure=not nameservers)
        if nameservers:
            hosts, ports = [], {}
            for spec in nameservers:
                host, _, port = spec.rpartition(":") if spec.count(":") == 1 else (spec, "", "")
                hosts.append(host)
                ports[host] = int(port or 53)
            self.resolver.nameservers = hosts
            self.resolver.nameserver_ports = ports
        self.lifetime = lifetime

    def txt(self, name: str) -> list[str]:
        try:
            answer = self.resolver.resolve(name, "TXT", lifetime=self.lifetime)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoAnswer):
            return []
        except dns.exception.DNSException as exc:
            raise DnsUnavailable(f"The DNS lookup of {name} failed ({type(exc).__name__}).") from None
        return [b"".join(record.strings).decode("utf-8", "replace") for record in answer]


def resolver() -> TxtResolver:
    return DnsPythonResolver(settings.HANGAR_SSO_DNS_NAMESERVERS, float(settings.HANGAR_SSO_TIMEOUT_S))
