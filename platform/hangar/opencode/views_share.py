"""OpenCode's `/share` and `/unshare` (`POST` and `DELETE /session/{id}/share`): the session with its
`share.url` set or cleared (hangar.conversations.share_services: a link into Hangar's own web app, scoped
by the org's policy, expiring, revocable, audited)."""

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from hangar.conversations.services import session_info
from hangar.conversations.share_services import session_share, session_unshare
from hangar.opencode.base import OpenCodeView

OC = ["opencode"]


class Share(OpenCodeView):
    @extend_schema(tags=OC, operation_id="oc_session_share", request=None, responses={200: dict})
    def post(self, request, project_id, session_id):
        session = self.get_session(session_id)
        return Response(session_info(session_share(actor=self.scope.actor, session=session)))

    @extend_schema(tags=OC, operation_id="oc_session_unshare", request=None, responses={200: dict})
    def delete(self, request, project_id, session_id):
        session = self.get_session(session_id)
        return Response(session_info(session_unshare(actor=self.scope.actor, session=session)))
