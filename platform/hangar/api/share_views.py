"""A share link's read-only view (hangar.conversations.share_selectors): `GET /api/shares/<token>`, what the
web app's `/share/<token>` page reads and polls. Open without signing in where the link allows it; a link
that is unknown, expired, revoked or not for this reader is the same 404. Never cached, and no Referer
leaves the page: the token is the link's secret."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.api.sessions_serializers import MessageOutput
from hangar.conversations.models import SessionShare
from hangar.conversations.share_selectors import share_view, shared_session


class SharedSessionTimeOut(serializers.Serializer):
    created = serializers.IntegerField(help_text="ms since the epoch")
    updated = serializers.IntegerField(help_text="ms since the epoch")


class SharedSessionOut(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    status = serializers.CharField()
    time = SharedSessionTimeOut()


class ShareLinkOut(serializers.Serializer):
    audience = serializers.ChoiceField(choices=["members", "link"])
    expires = serializers.IntegerField(help_text="ms since the epoch")


class ShareViewOut(serializers.Serializer):
    """conversations.share_selectors.share_view: the session, the link, its latest messages (masked)."""

    session = SharedSessionOut()
    share = ShareLinkOut()
    messages = MessageOutput(many=True, help_text="OpenCode {info, parts}, only what a reader needs")


class ShareView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(tags=["sessions"], operation_id="share_view", responses=ShareViewOut)
    def get(self, request, token: str):
        try:
            share = shared_session(token, request.user)
        except SessionShare.DoesNotExist:
            raise NotFound("This share link does not exist, has expired or was revoked.") from None
        response = Response(share_view(share))
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "no-referrer"
        return response
