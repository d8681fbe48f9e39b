"""Org caps on project settings: an org's admins cap what a project may set (sandbox CPUs, memory, disk,
network modes), inside the platform's own bounds (validation.LIMITS). A project write past a cap is a 400
naming the field; a new project's unset limits start at the smaller of the default and the cap."""

from __future__ import annotations

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.accounts.models import Org, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import ValidationError
from hangar.projects.models import NetworkPolicy, Project
from hangar.projects.validation import LIMITS

NUMERIC_CAPS = ("sandbox_cpus", "sandbox_memory_mb", "sandbox_disk_mb")
CAP_KEYS = (*NUMERIC_CAPS, "network_policies")


def clean_caps(caps) -> dict:
    if not isinstance(caps, dict):
        raise ValidationError({"caps": ["An object of caps."]})
    unknown = set(caps) - set(CAP_KEYS)
    if unknown:
        raise ValidationError({name: ["Unknown cap."] for name in sorted(unknown)})
    cleaned: dict = {}
    for name in NUMERIC_CAPS:
        value = caps.get(name)
        if value is None:
            continue
        low, high = LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
            raise ValidationError({name: [f"A cap between {low} and {high}, or null for none."]})
        cleaned[name] = value
    modes = caps.get("network_policies")
    if modes is not None:
        if not isinstance(modes, list) or not modes:
            raise ValidationError({"network_policies": ["A non-empty list of network modes, or null."]})
        for index, mode in enumerate(modes):
            if mode not in NetworkPolicy.values:
                raise ValidationError(
                    {f"network_policies[{index}]": [f"One of: {', '.join(NetworkPolicy.values)}."]}
                )
        cleaned["network_policies"] = sorted(set(modes))
    return cleaned


def check_caps(caps: dict, values: dict) -> None:
    """ValidationError naming the first field of `values` past the org's caps."""
    for name in NUMERIC_CAPS:
        if name in caps and name in values and values[name] > caps[name]:
            raise ValidationError({name: [f"The organisation caps this at {caps[name]}."]})
    modes = caps.get("network_policies")
    if modes and "network_policy" in values and values["network_policy"] not in modes:
        raise ValidationError({"network_policy": [f"The organisation allows only: {', '.join(modes)}."]})


def within_caps_defaults(caps: dict, values: dict) -> dict:
    """A new project's values with its unset limits brought within the caps (the defaults may exceed them)."""
    out, defaults = dict(values), Project()
    for name in NUMERIC_CAPS:
        if name in caps and name not in out:
            default = getattr(defaults, name)
            if default > caps[name]:
                out[name] = caps[name]
    modes = caps.get("network_policies")
    if modes and "network_policy" not in out and NetworkPolicy.NONE not in modes:
        out["network_policy"] = modes[0]
    return out


def projects_over(org: Org, caps: dict) -> list[dict]:
    """The org's projects whose current settings exceed `caps` (kept as they are; their next write of
    that field must come within)."""
    over = []
    for project in Project.objects.filter(org=org).order_by("pk"):
        for name in NUMERIC_CAPS:
            if name in caps and getattr(project, name) > caps[name]:
                over.append({"project": project.pk, "field": name, "value": getattr(project, name)})
        modes = caps.get("network_policies")
        if modes and project.network_policy not in modes:
            over.append({"project": project.pk, "field": "network_policy", "value": project.network_policy})
    return over


@transaction.atomic
def org_project_caps_set(*, actor: Actor, org: Org, caps) -> Org:
    """Replace the org's caps (admins and owners), audited with before and after."""
    require_role(actor, org.pk, Role.ADMIN)
    cleaned = clean_caps(caps)
    org = Org.objects.select_for_update().get(pk=org.pk)
    before, org.project_caps = org.project_caps, cleaned
    org.save(update_fields=["project_caps", "updated_at"])
    audit_record(actor=actor, action="org.project_caps.set", target=org, data={"from": before, "to": cleaned})
    return org
