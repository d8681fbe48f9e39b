"""Prompt templates filled from a webhook's JSON body: `{{ body.path.to.field }}` (list items by index,
`{{ body.jobs.0.name }}`). Paths are walked key by key, never evaluated; every other use of `{{` is refused
when the template is saved. Sizes are bounded so one call cannot make a huge prompt."""

import json
import re

MAX_TEMPLATE = 8_000
MAX_VALUE = 4_000  # characters of one filled-in value
MAX_PROMPT = 32_000
MAX_DEPTH = 12

SEGMENT = r"\.[A-Za-z0-9_-]{1,100}"
PLACEHOLDER = re.compile(r"\{\{\s*(body(?:" + SEGMENT + "){0," + str(MAX_DEPTH) + r"})\s*\}\}")


class TemplateError(ValueError):
    """`field` names the placeholder that could not be filled (or the template's own fault)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def template_check(template: str) -> str:
    """The template if it is well-formed: bounded, every `{{ }}` a body path."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateError("prompt_template", "must be a non-empty string")
    if len(template) > MAX_TEMPLATE:
        raise TemplateError("prompt_template", f"at most {MAX_TEMPLATE} characters")
    if "{{" in PLACEHOLDER.sub("", template) or "}}" in PLACEHOLDER.sub("", template):
        raise TemplateError("prompt_template", "placeholders are {{ body.path.to.field }} only")
    return template


def _lookup(body, path: str):
    value = body
    for key in path.split(".")[1:]:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        else:
            raise TemplateError(path, "missing from the body")
    if value is None:
        raise TemplateError(path, "is null")
    return value


def _text(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "…"


def template_render(template: str, body) -> str:
    """Fill every placeholder from `body`; TemplateError names the first one that does not fit."""
    prompt = PLACEHOLDER.sub(lambda m: _text(_lookup(body, m.group(1))), template)
    if not prompt.strip():
        raise TemplateError("prompt_template", "renders to an empty prompt")
    if len(prompt) > MAX_PROMPT:
        raise TemplateError("prompt_template", f"renders to more than {MAX_PROMPT} characters")
    return prompt
