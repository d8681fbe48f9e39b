"""High 6: a slow identity provider does not take the web tier down. The web is a real Daphne process as
deploy/run-web.sh starts it (its psycopg pool, here 4 connections); the provider answers one byte a second.
Sign-in starts aimed at it answer within the operator's deadline (HANGAR_SSO_TIMEOUT_S), never holding a
pooled DB connection while they wait, and meanwhile a signed-in member's requests are served at once.
Discovery and keys are cached: a second start does not fetch the document again."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from django.conf import settings
from joserfc import jwt
from joserfc.jwk import RSAKey

from hangar.sso import oidc
from hangar.sso.netguard import SsoRefused
from tests.console.idp import provider_at
from tests.oidc_idp.hostile import HostileIdp, discovery_with
from tests.opencode.live import Daphne

STARTS = 8
POOL = 4
DEADLINE_S = 2


@pytest.mark.django_db(transaction=True)
def test_a_provider_answering_a_byte_a_second_leaves_the_web_tier_serving_others(alice):
    idp = HostileIdp(discovery_with(), drip_s=1.0)
    provider_at(alice.org, idp.issuer, domain="slow.test")
    web = Daphne(
        settings.DATABASES["default"]["NAME"],
        env={"HANGAR_DB_POOL_MAX": str(POOL), "HANGAR_SSO_TIMEOUT_S": str(DEADLINE_S)},
    )
    outcomes: list[tuple[int | str, float]] = []

    def start(n: int) -> None:
        began = time.monotonic()
        try:
            answer = httpx.get(
                f"{web.url}/api/auth/sso/start",
                params={"email": f"u{n}@slow.test", "mode": "json"},
                timeout=30,
            )
            outcomes.append((answer.status_code, time.monotonic() - began))
        except httpx.HTTPError as exc:
            outcomes.append((type(exc).__name__, time.monotonic() - began))

    threads = [threading.Thread(target=start, args=(n,)) for n in range(STARTS)]
    try:
        for thread in threads:
            thread.start()
        # As many starts as the pool has connections are at the provider (or already answered).
        waited = time.monotonic() + 20
        while idp.requests + len(outcomes) < POOL and time.monotonic() < waited:
            time.sleep(0.05)
        assert idp.requests + len(outcomes) >= POOL, (idp.requests, outcomes)
        me = httpx.Client(base_url=web.url, headers={"Authorization": f"Bearer {alice.token}"}, timeout=10)
        for _ in range(3):
            began = time.monotonic()
            try:
                answer = me.get("/api/me")
            except httpx.TimeoutException:
                pytest.fail("a member's request waited 10 s behind the slow provider")
            assert answer.status_code == 200, answer.text
            # Normally milliseconds; the bound leaves room for a loaded CI machine, far below the pool's wait.
            assert time.monotonic() - began < 5, "a member waited behind the slow provider"
        for thread in threads:
            thread.join(timeout=40)
        assert len(outcomes) == STARTS
        assert all(code in (502, 503) for code, _ in outcomes), outcomes
        assert max(elapsed for _, elapsed in outcomes) < DEADLINE_S + 8, outcomes  # the provider: 300 s
    finally:
        idp.stop()
        web.stop()


@pytest.mark.django_db
def test_discovery_is_fetched_once_for_many_starts(api, alice):
    idp = HostileIdp(discovery_with())
    try:
        provider_at(alice.org, idp.issuer)
        for _ in range(3):
            answer = api().get("/api/auth/sso/start", {"email": "zed@evil.test", "mode": "json"})
            assert answer.status_code == 200, answer.content
        assert idp.paths.count("/o/.well-known/openid-configuration") == 1, idp.paths
    finally:
        idp.stop()


def _token(key: RSAKey, issuer: str, nonce: str) -> str:
    now = int(time.time())
    claims = {"iss": issuer, "sub": "s1", "aud": "c", "exp": now + 60, "iat": now, "nonce": nonce}
    return jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)


@pytest.mark.django_db
def test_the_providers_keys_are_cached_and_fetched_again_for_an_unknown_key():
    old = RSAKey.generate_key(2048, parameters={"kid": "k1"})
    idp = HostileIdp(discovery_with(), jwks={"keys": [old.as_dict(private=False)]})
    try:
        discovery = oidc.discover(idp.issuer)
        for nonce in ("n1", "n2", "n3"):
            claims = oidc.verify_id_token(
                discovery, _token(old, idp.issuer, nonce), client_id="c", nonce=nonce
            )
            assert claims["nonce"] == nonce
        assert sum("jwks" in path for path in idp.paths) == 1, idp.paths
        # The provider rotates its key: the token's kid is not in the cached set, so it is fetched again.
        new = RSAKey.generate_key(2048, parameters={"kid": "k2"})
        idp.jwks = {"keys": [new.as_dict(private=False)]}
        oidc.verify_id_token(discovery, _token(new, idp.issuer, "n4"), client_id="c", nonce="n4")
        assert sum("jwks" in path for path in idp.paths) == 2, idp.paths
        # A token signed by a key the provider never published still fails, after at most one more fetch.
        stranger = RSAKey.generate_key(2048, parameters={"kid": "k3"})
        with pytest.raises(SsoRefused):
            oidc.verify_id_token(discovery, _token(stranger, idp.issuer, "n5"), client_id="c", nonce="n5")
        assert sum("jwks" in path for path in idp.paths) <= 3
    finally:
        idp.stop()
