"""Org scoping for every `/api/orgs/<org>/...` route (the REST API's and the integrations' alike).

A request acts inside exactly one org. For a token, that is the org the token is bound to: a token of
org A on org B's URL is a 404, even when its user is also a member of B. For a browser session the org
comes from the URL and the user must be a member. Everything else is a 404 (never a 403), so a caller
cannot probe which orgs exist."""

from dataclasses import dataclass

import structlog

from hangar.accounts.actors import Actor, actor_from_request
from hangar.accounts.models import ApiToken, Membership, Org, Role
from hangar.accounts.selectors import check_role, membership_in
from hangar.errors import NotAuthenticated, NotFound


def org_from_request(request, org_slug: str) -> tuple[Org, Membership]:
    """Resolve the URL's org for this request and the caller's membership in it, or raise NotFound."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise NotAuthenticated()
    token = getattr(request, "auth", None)
    if isinstance(token, ApiToken):
        # The token's org and its user's membership there came with the token (accounts.token_rows).
        membership = token.membership if token.org.slug == org_slug else None
    else:
        membership = membership_in(user, org_slug)
    if membership is None:
        raise NotFound()
    structlog.contextvars.bind_contextvars(org=membership.org.slug)
    return membership.org, membership


@dataclass(frozen=True)
class OrgScope:
    org: Org
    membership: Membership
    actor: Actor

    def require(self, at_least: str) -> None:
        """PermissionDenied unless the caller's role is at least `at_least` (membership already proven)."""
        check_role(self.membership, at_least)


def scope_for(request, org_slug: str, at_least: str = Role.VIEWER) -> OrgScope:
    """org_from_request + the audit Actor + a role check, in one call for views."""
    org, membership = org_from_request(request, org_slug)
    scope = OrgScope(org=org, membership=membership, actor=actor_from_request(request, org.pk, membership))
    scope.require(at_least)
    return scope


class OrgScopedMixin:
    """For APIViews under `orgs/<str:org>/`: `self.scope(request, at_least)` gives the OrgScope."""

    min_role: str = Role.VIEWER
    kwargs: dict  # the URL's keyword arguments, set by the view this is mixed into

    def scope(self, request, at_least: str | None = None) -> OrgScope:
        return scope_for(request, self.kwargs["org"], at_least or self.min_role)
