"""The OpenID Connect relying party: discovery, the authorization request (code flow with PKCE S256, state
and nonce), the code exchange, and the ID token's verification against the provider's JWKS (joserfc, the
JOSE library of Authlib; PKCE challenge by Authlib). Every connection goes through hangar.sso.netguard."""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from authlib.oauth2.rfc7636 import create_s256_code_challenge
from django.conf import settings
from django.core.cache import cache
from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

from hangar.sso.netguard import SsoRefused, check_endpoint, request_json

# Asymmetric algorithms only: "none" and the HMAC family (keyed by the client secret) are refused.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
SCOPE = "openid email profile"
LEEWAY_S = 60
# A token naming a kid the cached keys lack fetches them again, at most once per this many seconds per
# provider (a stream of forged kids must not turn each sign-in into a fetch).
JWKS_REFRESH_S = 30
# The discovery members that are URLs (OIDC Discovery 3, RFC 8414 2): all are checked.
URL_MEMBERS = ("_endpoint", "_uri", "_iframe")
USED = ("authorization_endpoint", "token_endpoint", "jwks_uri")
CONNECTED = ("token_endpoint", "jwks_uri", "userinfo_endpoint")


@dataclass(frozen=True)
class Discovery:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str


@dataclass(frozen=True)
class Pending:
    """What the sign-in's start keeps (in the browser's server-side session) for its callback."""

    provider_id: int
    state: str
    nonce: str
    verifier: str
    next: str
    started: float


def _cache_key(kind: str, url: str) -> str:
    return f"sso_meta_{kind}_{hashlib.sha256(url.encode()).hexdigest()[:32]}"


def discover(issuer: str) -> Discovery:
    """The provider's metadata from `<issuer>/.well-known/openid-configuration`; its `issuer` must be the
    configured one exactly (OIDC Discovery 4.3), and each endpoint a URL the guard accepts. The document is
    cached (HANGAR_SSO_METADATA_CACHE_S) and checked again on every use, so a policy change applies at
    once; a failed fetch is remembered for HANGAR_SSO_FAILURE_CACHE_S, so a provider that hangs costs one
    request thread per that time, not one per sign-in attempt."""
    key = _cache_key("discovery", issuer)
    cached = cache.get(key)
    if cached is None:
        try:
            cached = {"doc": request_json(issuer + "/.well-known/openid-configuration")}
        except SsoRefused as exc:
            cache.set(key, {"error": str(exc)}, settings.HANGAR_SSO_FAILURE_CACHE_S)
            raise
        cache.set(key, cached, settings.HANGAR_SSO_METADATA_CACHE_S)
    if "error" in cached:
        raise SsoRefused(cached["error"])
    return _checked(issuer, cached["doc"])


def _checked(issuer: str, doc: dict) -> Discovery:
    if doc.get("issuer") != issuer:
        raise SsoRefused("The discovery document names another issuer.")
    for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not isinstance(doc.get(key), str):
            raise SsoRefused(f"The discovery document has no {key}.")
    endpoints = {}
    # Every URL the document names, used or not (a userinfo or end-session endpoint could be followed by a
    # later feature): a web address, never javascript:/data:/file:. The browser is sent to the
    # authorization endpoint; the platform connects to the others (checked again, pinned, when it does).
    for key, value in doc.items():
        if key.endswith(URL_MEMBERS) and (isinstance(value, str) or key in USED):
            try:
                endpoints[key] = check_endpoint(value, connect=key in CONNECTED)
            except SsoRefused as exc:
                raise SsoRefused(f"The discovery document's {key} is refused: {exc}") from None
    return Discovery(issuer=issuer, **{key: endpoints[key] for key in USED})


def begin(provider_id: int, discovery: Discovery, client_id: str, redirect_uri: str, email: str, next_: str):
    """(the URL to send the browser to, the Pending to keep)."""
    pending = Pending(
        provider_id=provider_id,
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        verifier=secrets.token_urlsafe(48),
        next=next_,
        started=time.time(),
    )
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "scope": SCOPE,
        "state": pending.state,
        "nonce": pending.nonce,
        "code_challenge": create_s256_code_challenge(pending.verifier),
        "code_challenge_method": "S256",
        **({"login_hint": email} if email else {}),
    }
    separator = "&" if "?" in discovery.authorization_endpoint else "?"
    return discovery.authorization_endpoint + separator + urlencode(query), pending


def exchange(
    discovery: Discovery, *, code: str, verifier: str, redirect_uri: str, client_id: str, client_secret: str
) -> str:
    """Trade the code (with the PKCE verifier) for tokens at the token endpoint; the ID token."""
    answer = request_json(
        discovery.token_endpoint,
        form={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "client_id": client_id,
        },
        auth=(client_id, client_secret),
    )
    id_token = answer.get("id_token")
    if not isinstance(id_token, str) or not id_token:
        raise SsoRefused("The token endpoint returned no ID token.")
    return id_token


def _keys(jwks_uri: str, *, fresh: bool = False) -> KeySet:
    """The provider's published keys, cached; `fresh` fetches them again (a token named an unknown kid)."""
    key = _cache_key("jwks", jwks_uri)
    data = None if fresh else cache.get(key)
    if data is None:
        data = request_json(jwks_uri)
        cache.set(key, data, settings.HANGAR_SSO_METADATA_CACHE_S)
    try:
        return KeySet.import_key_set(data)  # type: ignore[arg-type]
    except (JoseError, ValueError, TypeError, KeyError) as exc:
        raise SsoRefused(f"The identity provider's keys are not a JWK set ({type(exc).__name__}).") from None


def verify_id_token(discovery: Discovery, id_token: str, *, client_id: str, nonce: str) -> dict:
    """The ID token's claims once its signature checks against the provider's published keys and its
    iss, aud (and azp), exp, iat, sub and nonce are what this sign-in expects (OIDC Core 3.1.3.7)."""
    try:
        try:
            token = jwt.decode(id_token, _keys(discovery.jwks_uri), algorithms=list(ALGORITHMS))
        except InvalidKeyIdError:  # the provider may have rotated its keys since they were cached
            if not cache.add(_cache_key("jwks_refresh", discovery.jwks_uri), 1, JWKS_REFRESH_S):
                raise
            token = jwt.decode(id_token, _keys(discovery.jwks_uri, fresh=True), algorithms=list(ALGORITHMS))
        claims = dict(token.claims)
        jwt.JWTClaimsRegistry(
            leeway=LEEWAY_S,
            iss={"essential": True, "value": discovery.issuer},
            sub={"essential": True},
            exp={"essential": True},
            iat={"essential": True},
            nonce={"essential": True, "value": nonce},
        ).validate(claims)
    except (JoseError, ValueError) as exc:
        raise SsoRefused(f"The ID token did not verify ({type(exc).__name__}).") from None
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if client_id not in audiences:
        raise SsoRefused("The ID token was issued to another client.")
    if len(audiences) > 1 and claims.get("azp") != client_id:
        raise SsoRefused("The ID token's authorized party is another client.")
    return claims
