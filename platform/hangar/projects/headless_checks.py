"""Checks of a project's headless ask policy (hangar.projects.headless says what it is): a 400 names the
bad item, e.g. `headless_policy.webhook.approvers`."""

from hangar.accounts.permission_rules import clean_permission_rules
from hangar.errors import ValidationError
from hangar.projects.headless import (
    DEFAULT_EXPIRE_S,
    INTERACTIVE,
    MAX_APPROVERS,
    MAX_EXPIRE_S,
    MAX_REASON,
    MODES,
    TRIGGERS,
)

_KEYS = {"mode", "approvers", "expire_after_s", "rules", "reason"}


def _int(value, where: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError({where: [f"Must be a whole number between {low} and {high}."]})
    return value


def _clean_entry(trigger: str, entry) -> dict:
    where = f"headless_policy.{trigger}"
    if not isinstance(entry, dict):
        raise ValidationError({where: ["Must be an object with a mode."]})
    extra = set(entry) - _KEYS
    if extra:
        raise ValidationError({where: [f"Unknown keys: {', '.join(sorted(extra))}."]})
    mode = entry.get("mode")
    if mode not in MODES:
        raise ValidationError({f"{where}.mode": [f"Must be one of: {', '.join(MODES)}."]})
    out: dict = {"mode": mode}
    expire = entry.get("expire_after_s")
    if mode == "route" or (mode == "ask" and trigger not in INTERACTIVE):
        out["expire_after_s"] = _int(
            DEFAULT_EXPIRE_S if expire is None else expire, f"{where}.expire_after_s", 1, MAX_EXPIRE_S
        )
    elif mode == "ask" and expire is not None:
        out["expire_after_s"] = _int(expire, f"{where}.expire_after_s", 1, MAX_EXPIRE_S)
    if mode == "route":
        approvers = entry.get("approvers")
        if (
            not isinstance(approvers, list)
            or not 0 < len(approvers) <= MAX_APPROVERS
            or any(isinstance(a, bool) or not isinstance(a, int) or a < 1 for a in approvers)
        ):
            raise ValidationError(
                {f"{where}.approvers": [f"Must name 1 to {MAX_APPROVERS} members by user id."]}
            )
        out["approvers"] = sorted(set(approvers))
    if mode == "allow_listed":
        out["rules"] = clean_permission_rules(entry.get("rules", []), field=f"{where}.rules")
        if len(out["rules"]) > 200:
            raise ValidationError({f"{where}.rules": ["At most 200 rules."]})
    if mode in ("reject", "allow_listed") and entry.get("reason"):
        reason = entry["reason"]
        if not isinstance(reason, str) or len(reason) > MAX_REASON or "\x00" in reason:
            raise ValidationError({f"{where}.reason": [f"Must be text of at most {MAX_REASON} characters."]})
        out["reason"] = reason.strip()
    return out


def clean_headless_policy(value) -> dict:
    """The policy, checked; a 400 names the bad item (`headless_policy.webhook.approvers`). Approvers'
    membership is checked by the service, which knows the org."""
    if not isinstance(value, dict):
        raise ValidationError({"headless_policy": ["Must be an object keyed by trigger."]})
    unknown = [t for t in value if t not in TRIGGERS]
    if unknown:
        raise ValidationError(
            {"headless_policy": [f"Unknown trigger {unknown[0]!r}: one of {', '.join(TRIGGERS)}."]}
        )
    return {trigger: _clean_entry(trigger, value[trigger]) for trigger in TRIGGERS if trigger in value}
