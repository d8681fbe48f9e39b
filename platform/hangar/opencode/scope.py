"""Who is calling an OpenCode base URL (`/oc/<project_id>/...`), and which project they act in.

OpenCode clients authenticate with HTTP Basic (the password is a Hangar API token, the username is
ignored) or Bearer. The token's org must own the project and its user must still be a member; anything
else is a 404 that looks exactly like a missing project. Used by the DRF views and, through
`scope_for_async`, by the async views (SSE, the blocking prompt)."""

from dataclasses import dataclass

import structlog
from rest_framework.exceptions import AuthenticationFailed, NotAuthenticated, NotFound, PermissionDenied

from hangar.accounts.actors import Actor, actor_from_request
from hangar.accounts.authentication import BasicTokenAuthentication, TokenAuthentication
from hangar.accounts.models import ApiToken, Membership, Role
from hangar.accounts.selectors import membership_for
from hangar.opencode.db import db
from hangar.projects.models import Project

AUTHENTICATORS = (BasicTokenAuthentication, TokenAuthentication)


@dataclass(frozen=True)
class ProjectScope:
    project: Project
    membership: Membership
    actor: Actor

    def require(self, at_least: str) -> None:
        if not self.membership.has_role(at_least):
            raise PermissionDenied(f"This requires the {Role(at_least).value} role or higher.")


def project_for_token(token: ApiToken, project_id) -> tuple[Project, Membership]:
    try:
        pk = int(project_id)
    except (TypeError, ValueError):
        raise NotFound(f"Project not found: {project_id}") from None
    project = Project.objects.filter(pk=pk, org_id=token.org_id).select_related("org").first()
    membership = membership_for(token.user, token.org_id) if project else None
    if project is None or membership is None:
        raise NotFound(f"Project not found: {project_id}")
    structlog.contextvars.bind_contextvars(org=project.org.slug, project=project.pk)
    return project, membership


def scope_for(request, project_id) -> ProjectScope:
    """For a DRF request that already authenticated (request.auth is the ApiToken)."""
    token = getattr(request, "auth", None)
    if not isinstance(token, ApiToken):
        raise NotAuthenticated()
    project, membership = project_for_token(token, project_id)
    return ProjectScope(project=project, membership=membership, actor=actor_from_request(request, token.org_id))


def authenticate(request) -> ApiToken:
    """Run the DRF token authenticators on a plain Django request (the async views are not DRF)."""
    for cls in AUTHENTICATORS:
        result = cls().authenticate(request)
        if result is not None:
            request.user, request.auth = result
            return result[1]
    raise NotAuthenticated()


def _scope_sync(request, project_id) -> ProjectScope:
    authenticate(request)
    return scope_for(request, project_id)


async def scope_for_async(request, project_id) -> ProjectScope:
    return await db(_scope_sync)(request, project_id)


__all__ = ["AuthenticationFailed", "ProjectScope", "scope_for", "scope_for_async", "authenticate"]
