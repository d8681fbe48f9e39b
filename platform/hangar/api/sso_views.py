"""Single sign-on with OpenID Connect. An org's admins set its provider (`orgs/<org>/sso`; the client
secret is write-only); anyone starts a sign-in with their email (`auth/sso/start?email=`), which sends the
browser to the provider their domain maps to; the provider sends it back to `auth/sso/callback`, where the
code is exchanged, the ID token verified and the member signed in (provisioned on first sign-in)."""

from __future__ import annotations

import dataclasses
import time

from django.conf import settings
from django.contrib.auth import login
from django.http import HttpResponseRedirect
from django.utils.cache import add_never_cache_headers
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, Throttled
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar import errors
from hangar.accounts.actors import client_ip
from hangar.accounts.login_throttle import login_wait
from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.api.usage_views import reader_scope
from hangar.sso import oidc
from hangar.sso.domain_services import claim_view, sso_domain_verify
from hangar.sso.models import DomainProof
from hangar.sso.netguard import SsoRefused
from hangar.sso.selectors import client_secret, provider_by_id, provider_for_email, provider_of
from hangar.sso.services import (
    DEFAULT_ROLES,
    provider_view,
    sso_provider_delete,
    sso_provider_set,
    sso_sign_in,
    sso_sign_in_failed,
)

SESSION_KEY = "hangar.sso.pending"
PENDING_TTL_S = 600
MAX_PENDING = 5


def redirect_uri() -> str:
    return f"{settings.PUBLIC_URL}/api/auth/sso/callback"


def _safe_next(value: str) -> str:
    """A path on this site only (an open redirect would hand the signed-in browser to anyone)."""
    if not value.startswith("/") or value.startswith("//") or "\\" in value or len(value) > 500:
        return "/"
    return value


def _error(code: str, message: str, status_code: int = status.HTTP_400_BAD_REQUEST) -> Response:
    return Response({"error": {"code": code, "message": message}}, status=status_code)


def _callback_error(request, code: str, message: str, status_code: int) -> Response | HttpResponseRedirect:
    """A refused callback: JSON for an API client; a browser (which the provider sent here) goes back to
    the sign-in page, which says what went wrong by the code (the message stays out of the URL)."""
    if "application/json" in request.META.get("HTTP_ACCEPT", ""):
        return _error(code, message, status_code)
    return HttpResponseRedirect(f"/login?sso_error={code}")


class ProviderIn(serializers.Serializer):
    issuer = serializers.CharField(max_length=500)
    client_id = serializers.CharField(max_length=200)
    client_secret = serializers.CharField(
        max_length=2000, required=False, allow_null=True, default=None, help_text="write-only; omit to keep"
    )
    domains = serializers.ListField(child=serializers.CharField(max_length=253), max_length=50)
    default_role = serializers.ChoiceField(choices=[str(r) for r in DEFAULT_ROLES], default=Role.MEMBER)
    enabled = serializers.BooleanField(default=True)


class DomainClaimOut(serializers.Serializer):
    """An email domain the provider claims (sso.domain_services.claim_view): it routes sign-ins once
    verified, by the DNS TXT record named here or by the operator."""

    domain = serializers.CharField()
    verified = serializers.BooleanField()
    verified_by = serializers.ChoiceField(choices=DomainProof.choices, allow_null=True)
    verified_at = serializers.DateTimeField(allow_null=True)
    txt_name = serializers.CharField(help_text="the DNS TXT record to publish")
    txt_value = serializers.CharField(help_text="the value it must hold")


class ProviderOut(serializers.Serializer):
    """sso.services.provider_view: never the secret, only whether one is set."""

    issuer = serializers.CharField()
    client_id = serializers.CharField()
    has_client_secret = serializers.BooleanField()
    domains = serializers.ListField(child=serializers.CharField())
    domain_claims = DomainClaimOut(many=True)
    default_role = serializers.ChoiceField(choices=[str(r) for r in DEFAULT_ROLES])
    enabled = serializers.BooleanField()


class OrgSsoOut(serializers.Serializer):
    provider = ProviderOut(allow_null=True, help_text="null: the org has no provider")
    redirect_uri = serializers.CharField(help_text="the callback to register with the provider")


class OrgSsoView(APIView):
    """The org's provider: admins, owners and auditors read it (never the secret); admins set and remove."""

    @extend_schema(operation_id="sso_provider_get", responses=OrgSsoOut)
    def get(self, request, org):
        scope = reader_scope(request, org)
        return Response(
            {"provider": provider_view(provider_of(org=scope.org)), "redirect_uri": redirect_uri()}
        )

    @extend_schema(operation_id="sso_provider_set", request=ProviderIn, responses=OrgSsoOut)
    def put(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = ProviderIn(data=request.data)
        body.is_valid(raise_exception=True)
        provider = sso_provider_set(actor=scope.actor, org=scope.org, **body.validated_data)
        return Response({"provider": provider_view(provider), "redirect_uri": redirect_uri()})

    @extend_schema(operation_id="sso_provider_delete", responses={204: None})
    def delete(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        provider = provider_of(org=scope.org)
        if provider is None:
            raise NotFound()
        sso_provider_delete(actor=scope.actor, provider=provider)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SsoDomainVerifyView(APIView):
    """Prove the org's claim to an email domain by its DNS TXT record (admins); until then, and unless the
    operator approves it, the domain routes no sign-in."""

    @extend_schema(operation_id="sso_domain_verify", request=None, responses=DomainClaimOut)
    def post(self, request, org, domain):
        scope = scope_for(request, org, Role.ADMIN)
        return Response(claim_view(sso_domain_verify(actor=scope.actor, org=scope.org, domain=domain)))


class SsoStartView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        operation_id="sso_start",
        parameters=[
            OpenApiParameter("email", str),
            OpenApiParameter("next", str),
            OpenApiParameter("mode", str, description="json: answer {url} instead of redirecting"),
        ],
        responses={302: None},
    )
    def get(self, request):
        email = request.query_params.get("email", "").strip()[:254]
        # A start is a sign-in attempt: it counts against the same per-address and per-account budgets as
        # a password (and each one costs a fetch of the provider's discovery document).
        wait = login_wait(request._request, email)
        if wait:
            raise Throttled(wait=wait)
        provider = provider_for_email(email) if "@" in email else None
        if provider is None:
            return _error("sso_not_configured", "No single sign-on is set up for this email's domain.", 404)
        try:
            discovery = oidc.discover(provider.issuer)
        except SsoRefused as exc:
            return _error("sso_unavailable", str(exc), status.HTTP_502_BAD_GATEWAY)
        url, pending = oidc.begin(
            provider.pk,
            discovery,
            provider.client_id,
            redirect_uri(),
            email,
            _safe_next(request.query_params.get("next", "/")),
        )
        session = request._request.session
        kept = [p for p in session.get(SESSION_KEY, []) if time.time() - p["started"] < PENDING_TTL_S]
        session[SESSION_KEY] = [*kept[-(MAX_PENDING - 1) :], dataclasses.asdict(pending)]
        # The answer carries this browser's state and PKCE challenge: no cache may keep or share it.
        answer = (
            Response({"url": url})  # the web app's sign-in page navigates itself
            if request.query_params.get("mode") == "json"
            else HttpResponseRedirect(url)
        )
        add_never_cache_headers(answer)
        return answer


def _take_pending(request, state: str) -> oidc.Pending | None:
    """The pending sign-in this state names, removed from the session (a state is good for one callback)."""
    session = request._request.session
    pending = session.get(SESSION_KEY, [])
    match = next((p for p in pending if p["state"] == state), None)
    if match is None:
        return None
    session[SESSION_KEY] = [p for p in pending if p is not match]
    if time.time() - match["started"] >= PENDING_TTL_S:
        return None
    return oidc.Pending(**match)


class SsoCallbackView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        operation_id="sso_callback",
        parameters=[OpenApiParameter("code", str), OpenApiParameter("state", str)],
        responses={302: None},
    )
    def get(self, request):
        state = request.query_params.get("state", "")
        pending = _take_pending(request, state) if state else None
        if pending is None:
            message = "This sign-in was not started here or has expired; start again."
            return _callback_error(request, "sso_state", message, status.HTTP_400_BAD_REQUEST)
        provider = provider_by_id(pending.provider_id)
        if provider is None:
            message = "Single sign-on is no longer set up for this organisation."
            return _callback_error(request, "sso_not_configured", message, status.HTTP_400_BAD_REQUEST)
        ip, request_id = client_ip(request), getattr(request, "request_id", "")
        try:
            user = self._sign_in(request, provider, pending, ip, request_id)
        except (SsoRefused, errors.PermissionDenied) as exc:
            sso_sign_in_failed(provider=provider, reason=str(exc), ip=ip, request_id=request_id)
            return _callback_error(request, "sso_refused", str(exc), status.HTTP_403_FORBIDDEN)
        login(request._request, user, backend="django.contrib.auth.backends.ModelBackend")
        return HttpResponseRedirect(pending.next)

    @staticmethod
    def _sign_in(request, provider, pending: oidc.Pending, ip, request_id):
        if "error" in request.query_params:
            raise SsoRefused(f"The identity provider refused: {request.query_params['error'][:100]}.")
        code = request.query_params.get("code", "")
        if not code:
            raise SsoRefused("The identity provider sent no code.")
        discovery = oidc.discover(provider.issuer)
        id_token = oidc.exchange(
            discovery,
            code=code,
            verifier=pending.verifier,
            redirect_uri=redirect_uri(),
            client_id=provider.client_id,
            client_secret=client_secret(provider),
        )
        claims = oidc.verify_id_token(discovery, id_token, client_id=provider.client_id, nonce=pending.nonce)
        return sso_sign_in(provider=provider, claims=claims, ip=ip, request_id=request_id)
