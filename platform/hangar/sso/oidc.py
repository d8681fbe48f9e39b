"""The OpenID Connect relying party: discovery, the authorization request (code flow with PKCE S256, state
and nonce), the code exchange, and the ID token's verification against the provider's JWKS (joserfc, the
JOSE library of Authlib; PKCE challenge by Authlib). Every connection goes through hangar.sso.netguard."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from authlib.oauth2.rfc7636 import create_s256_code_challenge
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from hangar.sso.netguard import SsoRefused, check_endpoint, request_json

# Asymmetric algorithms only: "none" and the HMAC family (keyed by the client secret) are refused.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
SCOPE = "openid email profile"
LEEWAY_S = 60
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


def discover(issuer: str) -> Discovery:
    """The provider's metadata from `<issuer>/.well-known/openid-configuration`; its `issuer` must be the
    configured one exactly (OIDC Discovery 4.3), and each endpoint a URL the guard accepts."""
    doc = request_json(issuer + "/.well-known/openid-configuration")
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


def verify_id_token(discovery: Discovery, id_token: str, *, client_id: str, nonce: str) -> dict:
    """The ID token's claims once its signature checks against the provider's published keys and its
    iss, aud (and azp), exp, iat, sub and nonce are what this sign-in expects (OIDC Core 3.1.3.7)."""
    keys = KeySet.import_key_set(request_json(discovery.jwks_uri))  # type: ignore[arg-type]
    try:
        token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
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
