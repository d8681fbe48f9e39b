"""API tokens: create (the raw token is in this one response only), list (never the digest), revoke.
Members see and revoke their own tokens; admins see and revoke everyone's in the org."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from hangar.accounts.selectors import token_get, token_list
from hangar.accounts.token_services import token_create, token_revoke
from hangar.api.scoping import scope_for


class TokenOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    prefix = serializers.CharField()
    user = serializers.EmailField(source="user.email")
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    expires_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class TokenCreatedOut(TokenOut):
    token = serializers.CharField(help_text="The full token. Shown once: store it now.")


class TokenCreateIn(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    expires_at = serializers.DateTimeField(required=False, allow_null=True, default=None)


class TokenListCreateView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "tokens"

    @extend_schema(operation_id="tokens_list", responses=TokenOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response(TokenOut(token_list(org=scope.org, membership=scope.membership), many=True).data)

    @extend_schema(operation_id="tokens_create", request=TokenCreateIn, responses={201: TokenCreatedOut})
    def post(self, request, org):
        scope = scope_for(request, org)
        body = TokenCreateIn(data=request.data)
        body.is_valid(raise_exception=True)
        token, raw = token_create(actor=scope.actor, org=scope.org, user=request.user, **body.validated_data)
        return Response({**TokenOut(token).data, "token": raw}, status=status.HTTP_201_CREATED)


class TokenRevokeView(APIView):
    throttle_classes = [ScopedRateThrottle]
    throttle_scope = "tokens"

    @extend_schema(operation_id="tokens_revoke", responses=TokenOut)
    def delete(self, request, org, token_id):
        scope = scope_for(request, org)
        token = token_revoke(
            actor=scope.actor, token=token_get(org=scope.org, membership=scope.membership, token_id=token_id)
        )
        return Response(TokenOut(token).data)
