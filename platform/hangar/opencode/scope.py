"""Who is calling an OpenCode base URL (`/oc/<project_id>/...`), and which project they act in.

OpenCode clients authenticate with HTTP Basic (the password is a Hangar API token, the username is
ignored) or Bearer. The token's org must own the project and its user must still be a member; anything
else is a 404 that looks exactly like a missing project. Used by the DRF views and, through
`scope_for_async`, by the async views (SSE, the blocking prompt).

The token, its user, the membership and the URL's project come in one query (accounts.token_rows): the
project is joined on the token's own org (join_project), so a foreign project is simply not found."""

from dataclasses import dataclass

import structlog
from rest_framework.exceptions import NotAuthenticated, NotFound

from hangar.accounts.actors import Actor, actor_from_request
from hangar.accounts.models import ApiToken, Membership
from hangar.accounts.selectors import check_role
from hangar.accounts.token_rows import Join
from hangar.drf_auth import BasicTokenAuthentication, TokenAuthentication
from hangar.opencode.db import db
from hangar.projects.models import Project

AUTHENTICATORS = (BasicTokenAuthentication, TokenAuthentication)


def project_pk(project_id) -> int | None:
    try:
        return int(project_id)
    except (TypeError, ValueError):
        return None


def join_project(request, project_id) -> None:
    """Have the authenticators load the URL's project with the token (accounts.authentication.requested_join),
    only if the token's org owns it. Call before authentication runs."""
    pk = project_pk(project_id)
    request.token_join = (
        None
        if pk is None
        else Join(Project, "project", "project.org_id = t.org_id AND project.id = %s", (pk,))
    )


@dataclass(frozen=True)
class ProjectScope:
    project: Project
    membership: Membership
    actor: Actor

    def require(self, at_least: str) -> None:
        check_role(self.membership, at_least)


def scope_for(request, project_id) -> ProjectScope:
    """For a request that already authenticated after join_project (request.auth is the ApiToken)."""
    token = getattr(request, "auth", None)
    if not isinstance(token, ApiToken):
        raise NotAuthenticated()
    project = getattr(token, "project", None)
    if project is None or project.pk != project_pk(project_id) or token.membership is None:
        raise NotFound(f"Project not found: {project_id}")
    project.org = token.org  # the join proved they are the same org
    structlog.contextvars.bind_contextvars(org=token.org.slug, project=project.pk)
    actor = actor_from_request(request, token.org_id, token.membership)
    return ProjectScope(project=project, membership=token.membership, actor=actor)


def authenticate(request) -> ApiToken:
    """Run the token authenticators on a plain Django request (the async views are not DRF)."""
    for cls in AUTHENTICATORS:
        result = cls().authenticate(request)
        if result is not None:
            request.user, request.auth = result
            return result[1]
    raise NotAuthenticated()


def _scope_sync(request, project_id) -> ProjectScope:
    join_project(request, project_id)
    authenticate(request)
    return scope_for(request, project_id)


async def scope_for_async(request, project_id) -> ProjectScope:
    return await db(_scope_sync)(request, project_id)


__all__ = ["AUTHENTICATORS", "ProjectScope", "authenticate", "join_project", "scope_for", "scope_for_async"]
