"""Reads for projects, env vars and credentials, scoped to an org the caller already proved membership of
(hangar.api.scoping). Anything outside that org is a 404."""

from django.db.models import Q, QuerySet

from hangar.accounts.models import Membership, Org, Role
from hangar.errors import NotFound
from hangar.projects.models import Project, ProjectEnvVar, ProviderCredential


def project_list(*, org: Org) -> QuerySet[Project]:
    return Project.objects.filter(org=org).order_by("slug")


def project_get(*, org: Org, project_id) -> Project:
    """The org's project with this id (int or numeric string), else NotFound."""
    try:
        pk = int(project_id)
    except (TypeError, ValueError):
        raise NotFound() from None
    project = Project.objects.filter(org=org, pk=pk).select_related("org").first()
    if project is None:
        raise NotFound()
    return project


def env_list(*, project: Project) -> QuerySet[ProjectEnvVar]:
    return ProjectEnvVar.objects.filter(project=project).order_by("name")


def env_get(*, project: Project, name: str) -> ProjectEnvVar:
    var = ProjectEnvVar.objects.filter(project=project, name=name).first()
    if var is None:
        raise NotFound()
    return var


def credential_list(*, org: Org, membership: Membership) -> QuerySet[ProviderCredential]:
    """Org-wide credentials and the caller's own; admins also see other members' personal ones."""
    credentials = ProviderCredential.objects.filter(org=org).select_related("user").order_by("provider", "id")
    if not membership.has_role(Role.ADMIN):
        credentials = credentials.filter(Q(user__isnull=True) | Q(user_id=membership.user_id))
    return credentials


def credential_get(*, org: Org, membership: Membership, credential_id: int) -> ProviderCredential:
    credential = credential_list(org=org, membership=membership).filter(pk=credential_id).first()
    if credential is None:
        raise NotFound()
    return credential


def project_by_slug(*, org: Org, slug: str) -> Project | None:
    """The org's project with `slug`, or None (the first-run command finds or creates one)."""
    return Project.objects.filter(org=org, slug=slug).first()
