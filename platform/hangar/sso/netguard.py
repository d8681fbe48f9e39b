"""Where the platform may connect for single sign-on. An org's issuer URL is chosen by a tenant, and the web
process that fetches its discovery document, keys and tokens sits next to the platform's own services:
an issuer resolving to a private, loopback or metadata address would make it a request forger.

The rule is sandbox.netguard's, opened only by the operator's HANGAR_SSO_ALLOWED_NETWORKS (CIDRs: an
identity provider on the company network; the tests' provider on 127.0.0.1). Plain http is accepted only
when that setting is set (a private provider); otherwise https. Each request connects to the address that
was checked (the URL pinned to it, the name kept for Host and TLS), so a DNS answer that changes between
the check and the connect cannot redirect it. Bodies are read up to MAX_BYTES, within a total deadline
(hangar.sso.outbound)."""

from __future__ import annotations

import ipaddress
import json
import socket
from urllib.parse import SplitResult, urlunsplit

from django.conf import settings

from hangar.sso import outbound
from sandbox import netguard

MAX_BYTES = 1 << 20
MAX_URL = 2000


class SsoRefused(ValueError):
    """The URL or its answer is not acceptable (the message says why, without secrets)."""


def _schemes() -> tuple[str, ...]:
    return ("https", "http") if settings.HANGAR_SSO_ALLOWED_NETWORKS else ("https",)


def _split(url: object, max_length: int = 500) -> tuple[SplitResult, str, int]:
    if not isinstance(url, str) or not url.strip() or len(url) > max_length:
        raise SsoRefused(f"An https URL of at most {max_length} characters.")
    try:
        parts, host, port = netguard.split_url(url, _schemes())
    except ValueError as exc:
        raise SsoRefused(str(exc)) from None
    if parts.fragment:
        raise SsoRefused("The URL has no fragment.")
    if parts.scheme == "http" and not _operator_allowed(host, port):
        raise SsoRefused(
            f"Plain http is only for a host inside HANGAR_SSO_ALLOWED_NETWORKS; {host} is not: use https."
        )
    return parts, host, port


def _operator_allowed(host: str, port: int) -> bool:
    """Every address of `host` lies inside a network the operator opened (not merely a public one)."""
    allowed = netguard.networks(settings.HANGAR_SSO_ALLOWED_NETWORKS)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return False
    addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos}
    return bool(addresses) and all(any(a.version == n.version and a in n for n in allowed) for a in addresses)


def check_url(url: str) -> str:
    """The issuer, normalised, if its shape is acceptable (https, or http to an operator-allowed host; no
    query) and its host (when it resolves) is allowed."""
    parts, host, port = _split(url)
    if parts.query:
        raise SsoRefused("The issuer has no query or fragment.")
    _addresses(host, port)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")


def check_endpoint(url: object, *, connect: bool) -> str:
    """A URL from the provider's discovery document, if it is a web address Hangar accepts: https, or http
    to a host the operator opened (never javascript:, data:, file: or a relative reference). With
    `connect` (the platform itself will fetch it) its host is checked against private addresses too; the
    authorization endpoint is the browser's to visit and is not."""
    parts, host, port = _split(url, MAX_URL)
    if connect:
        _addresses(host, port)
    return urlunsplit(parts)


def _addresses(host: str, port: int) -> list[str]:
    allowed = netguard.networks(settings.HANGAR_SSO_ALLOWED_NETWORKS)
    try:
        infos = netguard.resolve(
            host, port, allowed, setting="HANGAR_SSO_ALLOWED_NETWORKS", what="the identity provider "
        )
    except netguard.Refused as exc:
        raise SsoRefused(str(exc)) from None
    except (OSError, UnicodeError) as exc:
        raise SsoRefused(f"Cannot resolve {host}.") from exc
    return sorted({str(info[4][0]) for info in infos})


def request_json(url: str, *, form: dict | None = None, auth: tuple[str, str] | None = None) -> dict:
    """GET (or POST `form` to) `url` on a checked address; the JSON object it answers. SsoRefused for a
    refused address, a failed request, a non-2xx answer, an oversized or non-object body."""
    parts, host, port = _split(url, MAX_URL)
    address = _addresses(host, port)[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    headers = {"Host": parts.netloc, "Accept": "application/json"}
    method = "POST" if form is not None else "GET"
    try:
        status, body = outbound.fetch(
            method,
            pinned,
            slot=f"{host}:{port}",
            max_bytes=MAX_BYTES,
            data=form,
            auth=auth,
            headers=headers,
            extensions=extensions,
        )
    except outbound.Unavailable as exc:
        raise SsoRefused(str(exc)) from None
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    if not 200 <= status < 300:
        error = payload.get("error") if isinstance(payload, dict) else None
        raise SsoRefused(f"The identity provider answered {status}" + (f" ({error})." if error else "."))
    if not isinstance(payload, dict):
        raise SsoRefused("The identity provider's answer is not a JSON object.")
    return payload
