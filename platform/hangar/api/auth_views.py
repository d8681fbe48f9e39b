"""Browser login: email + password into a Django session cookie, with CSRF. API clients use tokens instead."""

from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.middleware.csrf import get_token
from django.utils.decorators import method_decorator
from django.views.decorators.csrf import ensure_csrf_cookie
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.authentication import CSRFCheck
from rest_framework.exceptions import PermissionDenied, Throttled
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.actors import client_ip
from hangar.accounts.login_throttle import login_wait
from hangar.accounts.models import ApiToken
from hangar.accounts.selectors import memberships_for_user
from hangar.accounts.signin_services import sign_in_record
from hangar.accounts.ws_tickets import ticket_issue


class LoginIn(serializers.Serializer):
    email = serializers.EmailField()
    password = serializers.CharField(trim_whitespace=False)


class MembershipOut(serializers.Serializer):
    org = serializers.CharField(source="org.slug")
    org_name = serializers.CharField(source="org.name")
    role = serializers.CharField()


class MeOut(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.EmailField()
    name = serializers.CharField()
    is_staff = serializers.BooleanField()
    operator = serializers.BooleanField(
        help_text="The platform operator (a superuser, signed in with a browser session): may see and drain "
        "the sandbox hosts (/api/operator/hosts/)"
    )
    orgs = MembershipOut(many=True)
    token_org = serializers.CharField(
        allow_null=True, help_text="The org a token is bound to (token auth only)"
    )


def me_payload(request) -> dict:
    token = request.auth if isinstance(request.auth, ApiToken) else None
    memberships = memberships_for_user(request.user)
    if token is not None:  # a token acts in exactly one org: show only that one
        memberships = memberships.filter(org_id=token.org_id)
    user = request.user
    return MeOut(
        {
            "id": user.pk,
            "email": user.email,
            "name": user.name,
            "is_staff": user.is_staff,
            "operator": user.is_superuser and token is None,
            "orgs": list(memberships),
            "token_org": token.org.slug if token else None,
        }
    ).data


def enforce_csrf(request) -> None:
    """Login CSRF matters too (an attacker could log a victim into the attacker's account)."""
    # As DRF's SessionAuthentication.enforce_csrf does it: the middleware never calls the response factory
    # nor the view it is given, so neither exists; the stubs ask for both.
    check = CSRFCheck(lambda req: None)  # type: ignore[arg-type]
    check.process_request(request)
    reason = check.process_view(request, None, (), {})  # type: ignore[arg-type]

    if reason:
        raise PermissionDenied(f"CSRF Failed: {reason}")


class CsrfView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        operation_id="auth_csrf",
        responses=inline_serializer("CsrfOut", {"csrf_token": serializers.CharField()}),
    )
    @method_decorator(ensure_csrf_cookie)
    def get(self, request):
        return Response({"csrf_token": get_token(request)})


class LoginView(APIView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(operation_id="auth_login", request=LoginIn, responses={200: MeOut})
    def post(self, request):
        enforce_csrf(request._request)
        # Per account and per real client address (hangar.accounts.login_throttle), before any password check.
        email = request.data.get("email", "") if isinstance(request.data, dict) else ""
        wait = login_wait(request._request, email if isinstance(email, str) else "")
        if wait:
            raise Throttled(wait=wait)
        body = LoginIn(data=request.data)
        body.is_valid(raise_exception=True)
        user = authenticate(
            request._request,
            email=body.validated_data["email"].lower(),
            password=body.validated_data["password"],
        )
        sign_in_record(
            email=body.validated_data["email"].lower(),
            user=user,
            ip=client_ip(request),
            request_id=getattr(request, "request_id", ""),
        )
        if user is None:
            return Response(
                {"error": {"code": "invalid_credentials", "message": "Invalid email or password."}},
                status=status.HTTP_401_UNAUTHORIZED,
            )
        login(request._request, user)
        request.user = user
        return Response(me_payload(request))


class LogoutView(APIView):
    @extend_schema(operation_id="auth_logout", request=None, responses={204: None})
    def post(self, request):
        logout(request._request)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(APIView):
    @extend_schema(operation_id="me", responses=MeOut)
    def get(self, request):
        return Response(me_payload(request))


class WsTicketView(APIView):
    """A one-use ticket to open a WebSocket with (`/ws/...?ticket=`), for clients that cannot set headers on
    one: it acts as the token or browser session that asked for it (hangar.accounts.ws_tickets)."""

    @extend_schema(
        operation_id="auth_ws_ticket",
        request=None,
        responses={
            201: inline_serializer(
                "WsTicketOut", {"ticket": serializers.CharField(), "expires_in": serializers.IntegerField()}
            )
        },
    )
    def post(self, request):
        token = request.auth if isinstance(request.auth, ApiToken) else None
        ticket = ticket_issue(user=request.user, token=token)
        return Response(
            {"ticket": ticket, "expires_in": settings.HANGAR_WS_TICKET_TTL_S}, status=status.HTTP_201_CREATED
        )
