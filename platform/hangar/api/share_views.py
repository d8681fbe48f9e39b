"""A share link's read-only view (hangar.conversations.share_selectors): `GET /api/shares/<token>`, what the
web app's `/share/<token>` page reads and polls. Open without signing in where the link allows it; a link
that is unknown, expired, revoked or not for this reader is the same 404. Never cached, and no Referer
leaves the page: the token is the link's secret."""

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from hangar.conversations.models import SessionShare
from hangar.conversations.share_selectors import share_view, shared_session


class ShareView(APIView):
    permission_classes = [AllowAny]

    @extend_schema(tags=["sessions"], operation_id="share_view", responses={200: dict})
    def get(self, request, token: str):
        try:
            share = shared_session(token, request.user)
        except SessionShare.DoesNotExist:
            raise NotFound("This share link does not exist, has expired or was revoked.") from None
        response = Response(share_view(share))
        response["Cache-Control"] = "no-store"
        response["Referrer-Policy"] = "no-referrer"
        return response
