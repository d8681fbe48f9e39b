"""Invitations by link. Admins list, create and revoke an org's invitations; the link's holder reads what
it invites to and accepts it, signed in as the invited email or by creating that account (then signed in).
A used, revoked or expired link is a 410 saying which; an unknown one a 404."""

from django.contrib.auth import login
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.actors import client_ip
from hangar.accounts.invitation_services import (
    InvitationGone,
    NewAccount,
    invitation_accept,
    invitation_create,
    invitation_digest,
    invitation_link,
    invitation_revoke,
)
from hangar.accounts.models import ApiToken, Role
from hangar.accounts.selectors import invitation_by_digest, invitation_get, invitation_list
from hangar.api.auth_views import MeOut, enforce_csrf, me_payload
from hangar.api.scoping import scope_for

GONE = {
    "accepted": "This invitation has already been used.",
    "revoked": "This invitation was revoked.",
    "expired": "This invitation has expired.",
}


class InvitationOut(serializers.Serializer):
    id = serializers.IntegerField()
    email = serializers.EmailField()
    role = serializers.CharField()
    state = serializers.SerializerMethodField()
    invited_by = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    accepted_at = serializers.DateTimeField(allow_null=True)

    def get_state(self, row) -> str:
        return row.state()

    def get_invited_by(self, row) -> str | None:
        return row.invited_by.email if row.invited_by else None


class InvitationCreatedOut(InvitationOut):
    link = serializers.CharField(
        help_text="the link the mail carries, for the inviting admin to copy; only in this answer (only a "
        "digest of its secret is stored)"
    )


class InvitationPreviewOut(serializers.Serializer):
    org = serializers.CharField(help_text="slug")
    org_name = serializers.CharField()
    email = serializers.EmailField(help_text="the address invited")
    role = serializers.ChoiceField(choices=Role.choices)
    state = serializers.ChoiceField(choices=["pending", *GONE])
    expires_at = serializers.DateTimeField()
    signed_in_as = serializers.EmailField(allow_null=True, help_text="the reader's email, if signed in")


class InvitationAcceptedOut(serializers.Serializer):
    org = serializers.CharField(help_text="slug of the org joined")
    role = serializers.ChoiceField(choices=Role.choices)
    me = MeOut(help_text="the account now signed in, as /api/auth/me answers")


class InvitationCreateIn(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)


class InvitationAcceptIn(serializers.Serializer):
    password = serializers.CharField(required=False, trim_whitespace=False, max_length=200)
    name = serializers.CharField(required=False, default="", max_length=150, allow_blank=True)


def _out(row) -> dict:
    return InvitationOut(row).data


def _gone(state: str) -> Response:
    body = {"error": {"code": f"invitation_{state}", "message": GONE[state]}}
    return Response(body, status=status.HTTP_410_GONE)


class InvitationListCreateView(APIView):
    @extend_schema(operation_id="invitations_list", responses=InvitationOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        return Response([_out(row) for row in invitation_list(org=scope.org)[:500]])

    @extend_schema(
        operation_id="invitations_create", request=InvitationCreateIn, responses={201: InvitationCreatedOut}
    )
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = InvitationCreateIn(data=request.data)
        body.is_valid(raise_exception=True)
        row, raw = invitation_create(actor=scope.actor, org=scope.org, **body.validated_data)
        return Response({**_out(row), "link": invitation_link(raw)}, status=status.HTTP_201_CREATED)


class InvitationRevokeView(APIView):
    @extend_schema(operation_id="invitations_revoke", responses={204: None})
    def delete(self, request, org, invitation_id):
        scope = scope_for(request, org, Role.ADMIN)
        invitation_revoke(
            actor=scope.actor, invitation=invitation_get(org=scope.org, invitation_id=invitation_id)
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class InvitationPublicView(APIView):
    """What a link invites to (for the accept page): org, email, role, state. Anyone holding the link."""

    permission_classes = [AllowAny]

    @extend_schema(operation_id="invitation_preview", responses=InvitationPreviewOut)
    def get(self, request, secret):
        row = invitation_by_digest(invitation_digest(secret))
        if row is None:
            raise NotFound()
        return Response(
            {
                "org": row.org.slug,
                "org_name": row.org.name,
                "email": row.email,
                "role": row.role,
                "state": row.state(),
                "expires_at": row.expires_at,
                "signed_in_as": request.user.email if request.user.is_authenticated else None,
            }
        )


class InvitationAcceptView(APIView):
    """Accept: signed in (browser session) as the invited email, or signed out with a password for the
    new account, which is then signed in. An API token acts inside its own org, so it cannot accept."""

    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="invitation_accept", request=InvitationAcceptIn, responses=InvitationAcceptedOut
    )
    def post(self, request, secret):
        if isinstance(request.auth, ApiToken):
            return Response(
                {
                    "error": {
                        "code": "sign_in",
                        "message": "Accept an invitation signed in, not with a token.",
                    }
                },
                status=status.HTTP_403_FORBIDDEN,
            )
        user = request.user if request.user.is_authenticated else None
        if user is None:
            enforce_csrf(request._request)  # SessionAuthentication checks it for signed-in callers
        body = InvitationAcceptIn(data=request.data)
        body.is_valid(raise_exception=True)
        password = body.validated_data.get("password")
        try:
            membership = invitation_accept(
                raw=secret,
                user=user,
                new_account=NewAccount(password, body.validated_data["name"]) if password else None,
                ip=client_ip(request),
                request_id=getattr(request, "request_id", ""),
            )
        except InvitationGone as gone:
            return _gone(gone.state)
        if user is None:
            login(request._request, membership.user, backend="django.contrib.auth.backends.ModelBackend")
            request.user = membership.user
        return Response({"org": membership.org.slug, "role": membership.role, "me": me_payload(request)})
