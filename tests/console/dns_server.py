"""A real DNS server for the domain-proof tests: dnslib serving, on 127.0.0.1 and a free UDP port, the TXT
records a test puts in its zone (NXDOMAIN for any other name). Hangar's resolver (dnspython) is pointed at it
through HANGAR_SSO_DNS_NAMESERVERS, as an operator would point it at their own."""

from __future__ import annotations

from dnslib import QTYPE, RCODE, RR, TXT
from dnslib.server import BaseResolver, DNSLogger, DNSServer


class Zone(BaseResolver):
    def __init__(self) -> None:
        self.txt: dict[str, list[str]] = {}
        self.queries: list[str] = []

    def resolve(self, request, handler):
        reply = request.reply()
        name = str(request.q.qname).rstrip(".").lower()
        self.queries.append(name)
        if request.q.qtype == QTYPE.TXT:
            for value in self.txt.get(name, []):
                reply.add_answer(RR(request.q.qname, QTYPE.TXT, rdata=TXT(value), ttl=0))
        if not reply.rr and name not in self.txt:
            reply.header.rcode = RCODE.NXDOMAIN
        return reply


class LocalDns:
    def __init__(self) -> None:
        self.zone = Zone()
        self.server = DNSServer(
            self.zone,
            address="127.0.0.1",
            port=0,
            logger=DNSLogger("-request,-reply,-truncated,-error,-recv,-send,-data"),
        )
        self.server.start_thread()
        self.address = f"127.0.0.1:{self.server.server.server_address[1]}"

    def stop(self) -> None:
        self.server.stop()
