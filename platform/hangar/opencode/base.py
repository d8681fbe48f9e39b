"""The base of every synchronous OpenCode route: token auth (Basic or Bearer), the project scope, and
OpenCode-shaped errors instead of Hangar's `{"error": ...}` envelope."""

from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView

from hangar.accounts.models import Role
from hangar.conversations import selectors as conversation_selectors
from hangar.conversations.models import Session
from hangar.opencode.cross_site import cross_site_refusal
from hangar.opencode.errors import error_response
from hangar.opencode.scope import AUTHENTICATORS, ProjectScope, join_project, scope_for


class OpenCodeView(APIView):
    authentication_classes = list(AUTHENTICATORS)
    permission_classes = [IsAuthenticated]
    # Role needed per HTTP method; reads are open to every member, writes need `member`.
    min_role = {"GET": Role.VIEWER}
    default_min_role = Role.MEMBER

    def initial(self, request, *args, **kwargs):
        refusal = cross_site_refusal(request._request)  # before anything reads the body or acts
        if refusal is not None:
            raise refusal
        join_project(request, kwargs["project_id"])  # authentication (in super().initial) loads the project
        super().initial(request, *args, **kwargs)
        self.oc = scope_for(request, kwargs["project_id"])
        self.oc.require(self.min_role.get(request.method, self.default_min_role))

    def handle_exception(self, exc):
        return error_response(exc)

    @property
    def scope(self) -> ProjectScope:
        return self.oc

    def get_session(self, session_id: str) -> Session:
        try:
            session = conversation_selectors.session_get(
                self.oc.actor, session_id, project_id=self.oc.project.pk
            )
        except Session.DoesNotExist:
            raise NotFound(f"Session not found: {session_id}") from None
        # The session is the scope's project's (the filter above): the project the scope already read
        # stands in for it, so `session.project` costs no query.
        session.project = self.oc.project
        return session
