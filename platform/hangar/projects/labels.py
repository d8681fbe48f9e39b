"""A project's sandbox labels: what a host must carry to hold its sessions' sandboxes (placement,
hangar.engine.workspace.placement). Short lowercase words, a few of them: a label is matched exactly
against each host's labels (HANGAR_SANDBOX_HOST_LABELS), so anything else could never match."""

import re

from django.core.exceptions import ValidationError

LABEL = re.compile(r"^[a-z0-9][a-z0-9._-]{0,31}$")
MAX_LABELS = 8


def validate_sandbox_labels(value: object) -> None:
    """The model field's validator (the admin's form runs it): a list of distinct labels."""
    if not isinstance(value, list):
        raise ValidationError("a list of labels")
    if len(value) > MAX_LABELS:
        raise ValidationError(f"at most {MAX_LABELS} labels")
    for label in value:
        if not isinstance(label, str) or not LABEL.match(label):
            raise ValidationError(
                f"{str(label)[:40]!r}: a label is 1-32 of a-z 0-9 . _ - (starting with a letter or digit)"
            )
    if len(set(value)) != len(value):
        raise ValidationError("each label once")
