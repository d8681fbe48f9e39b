"""Where the platform may connect for single sign-on. An org's issuer URL is chosen by a tenant, and the web
process that fetches its discovery document, keys and tokens sits next to the platform's own services:
an issuer resolving to a private, loopback or metadata address would make it a request forger.

The rule is sandbox.netguard's, opened only by the operator's HANGAR_SSO_ALLOWED_NETWORKS (CIDRs: an
identity provider on the company network; the tests' provider on 127.0.0.1). Plain http is accepted only
when that setting is set (a private provider); otherwise https. Each request connects to the address that
was checked (the URL pinned to it, the name kept for Host and TLS), so a DNS answer that changes between
the check and the connect cannot redirect it. Bodies are read up to MAX_BYTES."""

from __future__ import annotations

import json
from urllib.parse import urlunsplit

import httpx
from django.conf import settings

from sandbox import netguard

MAX_BYTES = 1 << 20
TIMEOUT_S = 10.0


class SsoRefused(ValueError):
    """The URL or its answer is not acceptable (the message says why, without secrets)."""


def _schemes() -> tuple[str, ...]:
    return ("https", "http") if settings.HANGAR_SSO_ALLOWED_NETWORKS else ("https",)


def check_url(url: str) -> str:
    """The URL, normalised, if its shape is acceptable and its host (when it resolves) is allowed."""
    if not isinstance(url, str) or not url.strip() or len(url) > 500:
        raise SsoRefused("An http(s) URL of at most 500 characters.")
    try:
        parts, host, port = netguard.split_url(url, _schemes())
    except ValueError as exc:
        raise SsoRefused(str(exc)) from None
    if parts.query or parts.fragment:
        raise SsoRefused("The issuer has no query or fragment.")
    _addresses(host, port)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")


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
    try:
        parts, host, port = netguard.split_url(url, _schemes())
    except ValueError as exc:
        raise SsoRefused(f"{url}: {exc}") from None
    address = _addresses(host, port)[0]
    literal = f"[{address}]" if ":" in address else address
    netloc = f"{literal}:{parts.port}" if parts.port else literal
    pinned = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    headers = {"Host": parts.netloc, "Accept": "application/json"}
    try:
        with httpx.Client(timeout=TIMEOUT_S, follow_redirects=False) as client:
            method = "POST" if form is not None else "GET"
            with client.stream(
                method, pinned, data=form, auth=auth, headers=headers, extensions=extensions
            ) as response:
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > MAX_BYTES:
                        raise SsoRefused(f"The identity provider's answer is over {MAX_BYTES} bytes.")
                status = response.status_code
    except httpx.HTTPError as exc:
        raise SsoRefused(f"The identity provider did not answer ({type(exc).__name__}).") from None
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
