"""Provider credentials. The key is write-only: responses carry `has_api_key` and a hint of its last four
characters, never the key. `scope: "org"` (admins) or `"user"` (a personal key; the user's wins)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.api.scoping import scope_for
from hangar.netguard import clean_api_base
from hangar.projects.credential_services import credential_delete, credential_set
from hangar.projects.selectors import credential_get, credential_list


class ApiBaseField(serializers.CharField):
    """Not URLField: it rejects single-label hosts (http://llm:8080/v1), which self-hosted models use. The
    value stored is the cleaned one (no query, fragment or trailing slash); where it may point is
    hangar.netguard's rule."""

    def __init__(self, **kwargs):
        super().__init__(allow_blank=True, max_length=500, **kwargs)

    def to_internal_value(self, data):
        try:
            return clean_api_base(super().to_internal_value(data))
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None


class CredentialOut(serializers.Serializer):
    id = serializers.IntegerField()
    provider = serializers.CharField()
    scope = serializers.SerializerMethodField()
    user = serializers.SerializerMethodField()
    models = serializers.ListField(child=serializers.CharField(), source="models_list")
    api_base = serializers.CharField()
    has_api_key = serializers.SerializerMethodField()
    api_key_hint = serializers.CharField()
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_scope(self, credential) -> str:
        return "user" if credential.user_id else "org"

    def get_user(self, credential) -> str | None:
        return credential.user.email if credential.user_id else None

    def get_has_api_key(self, credential) -> bool:
        return bool(credential.api_key_encrypted)


class CredentialSetIn(serializers.Serializer):
    provider = serializers.RegexField(r"^[A-Za-z0-9._-]{1,64}$")
    scope = serializers.ChoiceField(choices=["org", "user"], default="org")
    api_key = serializers.CharField(required=False, allow_blank=True, write_only=True, trim_whitespace=False)
    api_base = ApiBaseField(required=False, default="")
    models = serializers.ListField(child=serializers.CharField(max_length=200), required=False)


class CredentialUpdateIn(serializers.Serializer):
    api_key = serializers.CharField(required=False, allow_blank=True, write_only=True, trim_whitespace=False)
    api_base = ApiBaseField(required=False)
    models = serializers.ListField(child=serializers.CharField(max_length=200), required=False)


class CredentialListSetView(APIView):
    @extend_schema(operation_id="credentials_list", responses=CredentialOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response(
            CredentialOut(credential_list(org=scope.org, membership=scope.membership), many=True).data
        )

    @extend_schema(operation_id="credentials_set", request=CredentialSetIn, responses={200: CredentialOut})
    def post(self, request, org):
        scope = scope_for(request, org, Role.MEMBER)
        body = CredentialSetIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        credential = credential_set(
            actor=scope.actor,
            org=scope.org,
            provider=data["provider"],
            api_key=data.get("api_key"),
            api_base=data["api_base"],
            models=data.get("models"),
            user=request.user if data["scope"] == "user" else None,
        )
        return Response(CredentialOut(credential).data)


class CredentialDetailView(APIView):
    @extend_schema(operation_id="credentials_get", responses=CredentialOut)
    def get(self, request, org, credential_id):
        scope = scope_for(request, org)
        return Response(
            CredentialOut(
                credential_get(org=scope.org, membership=scope.membership, credential_id=credential_id)
            ).data
        )

    @extend_schema(operation_id="credentials_update", request=CredentialUpdateIn, responses=CredentialOut)
    def patch(self, request, org, credential_id):
        scope = scope_for(request, org, Role.MEMBER)
        credential = credential_get(org=scope.org, membership=scope.membership, credential_id=credential_id)
        body = CredentialUpdateIn(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        credential = credential_set(
            actor=scope.actor,
            org=scope.org,
            provider=credential.provider,
            user=credential.user,
            api_key=data.get("api_key"),
            api_base=data.get("api_base", credential.api_base),
            models=data.get("models"),
        )
        return Response(CredentialOut(credential).data)

    @extend_schema(operation_id="credentials_delete", responses={204: None})
    def delete(self, request, org, credential_id):
        scope = scope_for(request, org, Role.MEMBER)
        credential_delete(
            actor=scope.actor,
            credential=credential_get(
                org=scope.org, membership=scope.membership, credential_id=credential_id
            ),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
