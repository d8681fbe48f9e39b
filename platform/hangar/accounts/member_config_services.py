"""A member's own OpenCode settings: what `PATCH /global/config` may set, per member of an org (OpenCode
keeps them in ~/.config/opencode/opencode.json; a hosted member has no home of their own). Only a person's
preferences: the model and agent they prefer, the name shown, the layout, the log level, updates. What
governs a project (permissions, providers, agents, commands, MCP, instructions...) is the project's, set by
its admins (`PATCH /config`); asking for it here is a 400 that says so. A key set to null is removed."""

from __future__ import annotations

import json
import re
from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.accounts.models import Membership, Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.errors import ValidationError

MODEL = re.compile(r"^[^/\s]{1,64}/\S{1,200}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_BYTES = 4_000


def _text(value: Any) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 100 and "\x00" not in value


CHECKS = {
    "username": (_text, "a name of 1 to 100 characters"),
    "model": (lambda v: isinstance(v, str) and bool(MODEL.fullmatch(v)), "provider/model"),
    "small_model": (lambda v: isinstance(v, str) and bool(MODEL.fullmatch(v)), "provider/model"),
    "default_agent": (lambda v: isinstance(v, str) and bool(NAME.fullmatch(v)), "an agent's name"),
    "autoupdate": (lambda v: isinstance(v, bool) or v == "notify", 'true, false or "notify"'),
    "layout": (lambda v: v in ("auto", "stretch"), '"auto" or "stretch"'),
    "logLevel": (lambda v: v in ("DEBUG", "INFO", "WARN", "ERROR"), "DEBUG, INFO, WARN or ERROR"),
}
# OpenCode's other Config keys: a project's (or not Hangar's) to set.
PROJECT_KEYS = {
    "agent", "attachment", "autoshare", "command", "compaction", "disabled_providers", "enabled_providers",
    "enterprise", "experimental", "formatter", "instructions", "lsp", "mcp", "mode", "permission", "plugin",
    "provider", "reference", "references", "server", "share", "shell", "skills", "snapshot",
    "subagent_depth", "tool_output", "tools", "watcher",
}  # fmt: skip


def checked(changes: Any) -> dict[str, Any]:
    """`changes` validated (ValidationError naming each bad field); `$schema` is accepted and dropped."""
    if not isinstance(changes, dict):
        raise ValidationError({"config": ["Must be a JSON object."]})
    errors: dict[str, list[str]] = {}
    out: dict[str, Any] = {}
    for key, value in changes.items():
        if key == "$schema":
            continue
        if key in PROJECT_KEYS:
            errors[key] = ["A project's setting: its admins change it with PATCH /config, or Hangar sets it."]
        elif key not in CHECKS:
            errors[str(key)[:64]] = ["Unexpected field."]
        elif value is not None and not CHECKS[key][0](value):
            errors[key] = [f"Must be {CHECKS[key][1]}."]
        else:
            out[key] = value
    if errors:
        raise ValidationError(errors)
    return out


def member_config_update(*, actor: Actor, membership: Membership, changes: Any) -> dict[str, Any]:
    """Merge `changes` into the member's own settings (a viewer has settings too); audited by key."""
    require_role(actor, membership.org_id, Role.VIEWER)
    if membership.user_id != actor.user_id:
        raise ValidationError({"config": ["Only your own settings."]})
    values = checked(changes)
    with transaction.atomic():
        row = Membership.objects.select_for_update().get(pk=membership.pk)
        merged = {**(row.opencode_config or {}), **values}
        merged = {k: v for k, v in merged.items() if v is not None}
        if len(json.dumps(merged)) > MAX_BYTES:
            raise ValidationError({"config": [f"At most {MAX_BYTES} bytes of settings."]})
        if merged != row.opencode_config:
            row.opencode_config = merged
            row.save(update_fields=["opencode_config"])
            audit_record(actor=actor, action="member.config.set", target=row, data={"keys": sorted(values)})
    membership.opencode_config = merged
    return merged
