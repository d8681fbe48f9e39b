"""Org scoping for `/api/orgs/<org>/...` routes: it lives in hangar.accounts.scoping, under every edge
(the API and the integrations both scope by org)."""

from hangar.accounts.scoping import OrgScope, OrgScopedMixin, org_from_request, scope_for

__all__ = ["OrgScope", "OrgScopedMixin", "org_from_request", "scope_for"]
