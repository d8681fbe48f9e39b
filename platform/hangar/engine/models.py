"""Engine-owned state. The org-level permission policy lives here until the foundation adds
`Org.permission_policy` (reported to the lead); `org_policy_for` reads either."""

from django.db import models


class OrgPermissionPolicy(models.Model):
    """Rules evaluated on their own before every other layer: a matching deny always wins."""

    org = models.OneToOneField("accounts.Org", on_delete=models.CASCADE, related_name="engine_permission_policy")
    rules = models.JSONField(default=list, blank=True, help_text="[{permission, pattern, action}]")
    updated_at = models.DateTimeField(auto_now=True)


def org_policy_for(org) -> list[dict]:
    rules = getattr(org, "permission_policy", None)
    if rules:
        return list(rules)
    row = OrgPermissionPolicy.objects.filter(org_id=org.pk).first()
    return list(row.rules) if row else []
