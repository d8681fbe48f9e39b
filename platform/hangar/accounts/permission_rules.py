"""Permission rulesets as in the seeds (a list of {permission, pattern, action}; last match wins), validated
the same way wherever one is stored: an org's policy (here, in accounts) and a project's rules (projects).
Errors are DRF ValidationErrors keyed by field, so a 400 names the field."""

from hangar.errors import ValidationError

ACTIONS = ("allow", "ask", "deny")


def clean_permission_rules(rules, field: str = "permission_rules") -> list[dict]:
    """A ruleset as in the seeds: a list of {permission, pattern, action}; last match wins. Errors name
    `field[index].key`."""
    if not isinstance(rules, list):
        raise ValidationError({field: ["Must be a list of {permission, pattern, action}."]})
    cleaned = []
    for index, rule in enumerate(rules):
        where = f"{field}[{index}]"
        if not isinstance(rule, dict):
            raise ValidationError({where: ["Must be an object with permission, pattern and action."]})
        extra = set(rule) - {"permission", "pattern", "action"}
        if extra:
            raise ValidationError({where: [f"Unknown keys: {', '.join(sorted(extra))}."]})
        for key in ("permission", "pattern"):
            if not isinstance(rule.get(key), str) or not rule[key] or len(rule[key]) > 500:
                raise ValidationError({f"{where}.{key}": ["Must be a non-empty string."]})
        if rule.get("action") not in ACTIONS:
            raise ValidationError({f"{where}.action": [f"Must be one of: {', '.join(ACTIONS)}."]})
        cleaned.append(
            {"permission": rule["permission"], "pattern": rule["pattern"], "action": rule["action"]}
        )
    return cleaned
