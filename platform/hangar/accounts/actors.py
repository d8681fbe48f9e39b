"""Who is acting. Every service takes an `Actor`: a user (browser), a token (API), an integration
(Slack, webhook) or the system (workers, beat). It carries the org the action is scoped to and the
request context that the audit log records."""

from dataclasses import dataclass, field
from typing import Any

from hangar.audit.models import ActorType


@dataclass(frozen=True)
class Actor:
    type: str
    org_id: int | None
    user: Any = None  # accounts.User or None
    token: Any = None  # accounts.ApiToken or None
    # accounts.Membership of (user, org_id) that the edge already loaded for this request, so services'
    # role checks (accounts.selectors.require_role) do not read it again; None: they read it.
    membership: Any = None
    label: str = ""
    ip: str | None = None
    request_id: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        if self.token is not None:
            return str(self.token.pk)
        if self.user is not None:
            return str(self.user.pk)
        return self.label

    @property
    def user_id(self) -> int | None:
        return getattr(self.user, "pk", None)


def system_actor(org_id: int | None, label: str = "system") -> Actor:
    return Actor(type=ActorType.SYSTEM, org_id=org_id, label=label)


def client_ip(request) -> str | None:
    """The caller's address for the audit log. X-Forwarded-For is client-controlled, so it is read only
    behind proxies the operator declares (HANGAR_TRUSTED_PROXY_HOPS = how many append to it), taking the
    address the outermost trusted proxy saw; otherwise the socket's peer address."""
    from django.conf import settings

    hops = settings.HANGAR_TRUSTED_PROXY_HOPS
    chain = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if hops and len(chain) >= hops:
        return chain[-hops]
    return request.META.get("REMOTE_ADDR") or None


def actor_from_request(request, org_id: int | None, membership=None) -> Actor:
    """Build the actor for a DRF/Django request: token auth sets `request.auth` to the ApiToken.
    `membership` is the caller's in `org_id`, when the edge has just loaded it."""
    from hangar.accounts.models import ApiToken

    token = request.auth if isinstance(getattr(request, "auth", None), ApiToken) else None
    return Actor(
        type=ActorType.TOKEN if token else ActorType.USER,
        org_id=org_id,
        user=request.user if request.user.is_authenticated else None,
        token=token,
        membership=membership,
        label=token.prefix if token else getattr(request.user, "email", ""),
        ip=client_ip(request),
        request_id=getattr(request, "request_id", ""),
    )
