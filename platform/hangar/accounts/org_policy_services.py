"""Writes for an org's policies on its agents and sessions: the permission policy (the org's rules,
above every project's), who may share a session, which MCP servers projects may use, the instructions
sent with every session, and the operator's caps on the org's share of workers and hosts. Separate from
members and tokens (hangar.accounts.services, token_services) because these set what the org allows,
not who belongs to it. Each is atomic and audits its before and after."""

from django.db import transaction

from hangar import mcp_config
from hangar.accounts.actors import Actor
from hangar.accounts.models import Org, Role
from hangar.accounts.permission_rules import clean_permission_rules
from hangar.accounts.selectors import require_role
from hangar.audit.models import ActorType
from hangar.audit.services import audit_record
from hangar.errors import PermissionDenied, ValidationError


@transaction.atomic
def org_permission_policy_set(*, actor: Actor, org: Org, rules: list) -> Org:
    """Replace the org-wide permission policy (admins and owners). Its denies beat every project, member,
    session and "always" allow, its asks cannot be loosened below it, its allows are defaults the layers
    below may narrow; running sessions apply it at their next tool call (hangar.engine.turn.live_policy)."""
    require_role(actor, org.pk, Role.ADMIN)
    cleaned = clean_permission_rules(rules, field="rules")
    org = Org.objects.select_for_update().get(pk=org.pk)
    before, org.permission_policy = org.permission_policy, cleaned
    org.save(update_fields=["permission_policy", "updated_at"])  # the stamp running sessions compare
    audit_record(
        actor=actor, action="org.permission_policy.set", target=org, data={"from": before, "to": cleaned}
    )
    return org


SHARE_POLICIES = ("off", "members", "link")


@transaction.atomic
def org_share_policy_set(*, actor: Actor, org: Org, policy: str) -> Org:
    """Who may open the org's session share links (admins and owners): nobody, members, or anyone with the
    link. Links already given are judged by the policy in force when they are opened."""
    require_role(actor, org.pk, Role.ADMIN)
    if policy not in SHARE_POLICIES:
        raise ValidationError({"policy": [f"Must be one of {', '.join(SHARE_POLICIES)}."]})
    org = Org.objects.select_for_update().get(pk=org.pk)
    before, org.share_policy = org.share_policy, policy
    org.save(update_fields=["share_policy", "updated_at"])
    audit_record(actor=actor, action="org.share_policy.set", target=org, data={"from": before, "to": policy})
    return org


@transaction.atomic
def org_mcp_policy_set(*, actor: Actor, org: Org, policy: object) -> Org:
    """Replace the org's MCP allow-list (admins and owners): which local commands and remote URLs its
    projects and workspaces may name. Running sessions read it again at their next step."""
    require_role(actor, org.pk, Role.ADMIN)
    try:
        cleaned = mcp_config.clean_policy(policy, field="policy")
    except mcp_config.McpConfigError as exc:
        raise ValidationError({exc.field: [exc.message]}) from None
    org = Org.objects.select_for_update().get(pk=org.pk)
    before, org.mcp_policy = org.mcp_policy, cleaned
    org.save(update_fields=["mcp_policy", "updated_at"])
    audit_record(actor=actor, action="org.mcp_policy.set", target=org, data={"from": before, "to": cleaned})
    return org


MAX_INSTRUCTIONS = 20_000  # characters: about 5,000 tokens sent with every session's system context


@transaction.atomic
def org_instructions_set(*, actor: Actor, org: Org, text: str) -> Org:
    """Replace the org's instructions to the agent (admins and owners). Sessions tell the model of the
    change at their next run (hangar.engine.turn.system_context)."""
    require_role(actor, org.pk, Role.ADMIN)
    if not isinstance(text, str) or len(text) > MAX_INSTRUCTIONS:
        raise ValidationError({"text": [f"Must be text of at most {MAX_INSTRUCTIONS} characters."]})
    if "\x00" in text:
        raise ValidationError({"text": ["Must not contain NUL characters."]})
    text = text.strip()
    org = Org.objects.select_for_update().get(pk=org.pk)
    before, org.instructions = org.instructions, text
    org.save(update_fields=["instructions", "updated_at"])
    audit_record(actor=actor, action="org.instructions.set", target=org, data={"from": before, "to": text})
    return org


@transaction.atomic
def org_limits_set(
    *, actor: Actor, org: Org, max_concurrent_runs: int | None, max_live_sandboxes: int | None
) -> Org:
    """Set the org's fair shares of the shared workers and hosts (hangar.engine.run.fairness); None: the
    platform's default. An org's own owners and admins may not: the caps protect the other tenants."""
    operator = actor.type == ActorType.SYSTEM or bool(actor.user is not None and actor.user.is_superuser)
    if not operator:
        raise PermissionDenied("only the platform operator sets an organisation's limits")
    for field, value in (
        ("max_concurrent_runs", max_concurrent_runs),
        ("max_live_sandboxes", max_live_sandboxes),
    ):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValidationError({field: ["Must be a positive integer, or null for the platform default."]})
    org = Org.objects.select_for_update().get(pk=org.pk)
    before = {"max_concurrent_runs": org.max_concurrent_runs, "max_live_sandboxes": org.max_live_sandboxes}
    org.max_concurrent_runs, org.max_live_sandboxes = max_concurrent_runs, max_live_sandboxes
    org.save(update_fields=["max_concurrent_runs", "max_live_sandboxes", "updated_at"])
    after = {"max_concurrent_runs": max_concurrent_runs, "max_live_sandboxes": max_live_sandboxes}
    audit_record(actor=actor, action="org.limits.set", target=org, data={"from": before, "to": after})
    return org
