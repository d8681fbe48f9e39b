"""Members of an org: list (any member), add by email / change role / remove (admin; owner role by owners)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.accounts.models import Invitation, Role
from hangar.accounts.selectors import member_get, member_list
from hangar.accounts.services import member_add, member_remove, member_role_change
from hangar.api.scoping import scope_for


class MemberOut(serializers.Serializer):
    id = serializers.IntegerField()
    user = serializers.IntegerField(source="user_id", help_text="the user's id (a member budget names it)")
    email = serializers.EmailField(source="user.email")
    name = serializers.CharField(source="user.name")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class InvitedOut(serializers.Serializer):
    """An existing account was invited, not added: it joins by accepting the link mailed to it."""

    invited = serializers.SerializerMethodField()
    email = serializers.EmailField()
    role = serializers.CharField()
    expires_at = serializers.DateTimeField()

    def get_invited(self, _invitation) -> bool:
        return True


class MemberAddIn(serializers.Serializer):
    email = serializers.EmailField()
    role = serializers.ChoiceField(choices=Role.choices, default=Role.MEMBER)
    name = serializers.CharField(max_length=150, required=False, default="")


class MemberRoleIn(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices)


class MemberListAddView(APIView):
    @extend_schema(operation_id="members_list", responses=MemberOut(many=True))
    def get(self, request, org):
        scope = scope_for(request, org)
        return Response(MemberOut(member_list(org=scope.org), many=True).data)

    @extend_schema(
        operation_id="members_add", request=MemberAddIn, responses={201: MemberOut, 202: InvitedOut}
    )
    def post(self, request, org):
        scope = scope_for(request, org, Role.ADMIN)
        body = MemberAddIn(data=request.data)
        body.is_valid(raise_exception=True)
        added = member_add(actor=scope.actor, org=scope.org, **body.validated_data)
        if isinstance(added, Invitation):  # an existing account joins only by accepting
            return Response(InvitedOut(added).data, status=status.HTTP_202_ACCEPTED)
        return Response(MemberOut(added).data, status=status.HTTP_201_CREATED)


class MemberDetailView(APIView):
    @extend_schema(operation_id="members_get", responses=MemberOut)
    def get(self, request, org, member_id):
        scope = scope_for(request, org)
        return Response(MemberOut(member_get(org=scope.org, membership_id=member_id)).data)

    @extend_schema(operation_id="members_change_role", request=MemberRoleIn, responses=MemberOut)
    def patch(self, request, org, member_id):
        scope = scope_for(request, org, Role.ADMIN)
        membership = member_get(org=scope.org, membership_id=member_id)
        body = MemberRoleIn(data=request.data)
        body.is_valid(raise_exception=True)
        membership = member_role_change(
            actor=scope.actor, membership=membership, role=body.validated_data["role"]
        )
        return Response(MemberOut(membership).data)

    @extend_schema(operation_id="members_remove", responses={204: None})
    def delete(self, request, org, member_id):
        scope = scope_for(request, org)  # the service decides: admins remove anyone, members only leave
        member_remove(actor=scope.actor, membership=member_get(org=scope.org, membership_id=member_id))
        return Response(status=status.HTTP_204_NO_CONTENT)
