"""Validation of project settings shared by the API serializers and the services (which are also called by
management commands). Errors are DRF ValidationErrors keyed by field, so a 400 names the field."""

import re

from django.conf import settings

from hangar import mcp_config
from hangar.accounts.permission_rules import clean_permission_rules
from hangar.agent_config import AgentConfigError, clean_agent_fields
from hangar.errors import ValidationError
from hangar.projects.headless_checks import clean_headless_policy
from hangar.projects.models import NetworkPolicy
from sandbox.agent import netpolicy

# Bounds a project may choose within; a sandbox outside them is either useless or a noisy neighbour.
LIMITS = {
    "sandbox_cpus": (0.1, 8.0),
    "sandbox_memory_mb": (128, 16384),
    "sandbox_pids": (16, 4096),
    "sandbox_disk_mb": (256, 65536),
    "command_timeout_s": (1, 3600),
}
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
MAX_ALLOWLIST = 200


def clean_allowlist(entries, field: str = "network_allowlist") -> list[str]:
    """Allowlist entries: a host name (optionally `*.` wildcard), an IP or CIDR, each with optional :port.
    IP/CIDR entries obey the same address policy as the egress proxy (sandbox/agent/netpolicy.py): never
    loopback, link-local or metadata; private ranges only inside HANGAR_EGRESS_ALLOW_PRIVATE."""
    if not isinstance(entries, list):
        raise ValidationError({field: ["Must be a list of hosts."]})
    if len(entries) > MAX_ALLOWLIST:
        raise ValidationError({field: [f"At most {MAX_ALLOWLIST} entries."]})
    operator = netpolicy.parse_ranges(settings.HANGAR_EGRESS_ALLOW_PRIVATE)
    cleaned = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, str) or len(entry) > 300:
            raise ValidationError({f"{field}[{index}]": ["Must be a host, IP or CIDR, optional :port."]})
        try:
            cleaned.append(netpolicy.check_entry(entry, operator))
        except ValueError as exc:
            raise ValidationError({f"{field}[{index}]": [f"{entry.strip()[:100]}: {exc}."]}) from None
    return cleaned


MAX_MODEL_LIMITS = 200
MAX_TOKENS = 100_000_000


def clean_model_limits(value) -> dict:
    """{"provider/model" or "model": {"context": N, "output": N?, "input": N?, "attachments": bool?}}:
    positive whole token counts, the answer and the input each within the context; `attachments`: the model
    takes images and PDFs."""
    if not isinstance(value, dict):
        raise ValidationError({"model_limits": ["Must be an object keyed by provider/model."]})
    if len(value) > MAX_MODEL_LIMITS:
        raise ValidationError({"model_limits": [f"At most {MAX_MODEL_LIMITS} models."]})
    cleaned = {}
    for key, entry in value.items():
        where = f"model_limits[{str(key)[:100]!r}]"
        if not isinstance(key, str) or not key.strip() or len(key) > 200:
            raise ValidationError({where: ["A model name of 1 to 200 characters, e.g. openai/gpt-4o."]})
        if not isinstance(entry, dict) or "context" not in entry:
            raise ValidationError({where: ['Must be an object with at least "context".']})
        unknown = set(entry) - {"context", "output", "input", "attachments"}
        if unknown:
            raise ValidationError({f"{where}.{sorted(unknown)[0]}": ["Unknown field."]})
        if not isinstance(entry.get("attachments", False), bool):
            raise ValidationError({f"{where}.attachments": ["Must be true or false."]})
        for name, number in entry.items():
            if name == "attachments":
                continue
            if isinstance(number, bool) or not isinstance(number, int) or not 0 < number <= MAX_TOKENS:
                raise ValidationError(
                    {f"{where}.{name}": [f"Must be a whole number of tokens, 1 to {MAX_TOKENS}."]}
                )
        for name in ("output", "input"):
            if entry.get(name, 0) > entry["context"]:
                raise ValidationError({f"{where}.{name}": ["Must not exceed the context."]})
        cleaned[key.strip()] = dict(entry)
    return cleaned


def clean_limits(values: dict) -> dict:
    for name, (low, high) in LIMITS.items():
        if name in values:
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise ValidationError({name: [f"Must be a number between {low} and {high}."]})
    return values


def clean_project_fields(values: dict) -> dict:
    """Validate the settable project fields present in `values`; returns the cleaned values."""
    values = dict(values)
    if "permission_rules" in values:
        values["permission_rules"] = clean_permission_rules(values["permission_rules"])
    if "headless_policy" in values:
        values["headless_policy"] = clean_headless_policy(values["headless_policy"])
    for field in ("network_allowlist", "setup_network_allowlist"):
        if field in values:
            values[field] = clean_allowlist(values[field], field)
    if "model_limits" in values:
        values["model_limits"] = clean_model_limits(values["model_limits"])
    if "network_policy" in values and values["network_policy"] not in NetworkPolicy.values:
        raise ValidationError({"network_policy": [f"Must be one of: {', '.join(NetworkPolicy.values)}."]})
    if "agents" in values:
        values["agents"] = clean_agents(values["agents"])
    if "mcp" in values:
        try:
            values["mcp"] = mcp_config.clean_servers(values["mcp"])
        except mcp_config.McpConfigError as exc:
            raise ValidationError({exc.field: [exc.message]}) from None
    if "protected_branches" in values:
        values["protected_branches"] = clean_protected_branches(values["protected_branches"])
    if values.get("sandbox_image"):
        clean_sandbox_image(values["sandbox_image"])
    return clean_repo_fields(clean_limits(values))


MAX_PROTECTED_BRANCHES = 50


def clean_protected_branches(patterns) -> list[str]:
    """Branch name patterns (fnmatch: `release/*`), at most 50, each 1-200 printable characters without
    spaces; a 400 names the bad element."""
    if not isinstance(patterns, list) or len(patterns) > MAX_PROTECTED_BRANCHES:
        raise ValidationError(
            {"protected_branches": [f"Must be a list of at most {MAX_PROTECTED_BRANCHES} branch patterns."]}
        )
    for index, pattern in enumerate(patterns):
        if not isinstance(pattern, str) or not 0 < len(pattern) <= 200 or any(ord(c) <= 32 for c in pattern):
            raise ValidationError(
                {
                    f"protected_branches[{index}]": [
                        "Must be a branch pattern of 1 to 200 characters, no spaces."
                    ]
                }
            )
    return patterns


def sandbox_image_allowed(image: str) -> bool:
    """Empty (the platform's own image) or one the operator lists in HANGAR_SANDBOX_IMAGES."""
    from django.conf import settings

    return not image or image in settings.HANGAR_SANDBOX_IMAGES


def clean_sandbox_image(image: str) -> None:
    from django.conf import settings

    if not sandbox_image_allowed(image):
        allowed = ", ".join(settings.HANGAR_SANDBOX_IMAGES) or "none besides the platform's own"
        raise ValidationError(
            {
                "sandbox_image": [
                    f"Must be empty (the platform's image) or an image the operator allows: {allowed}."
                ]
            }
        )


MAX_PROJECT_AGENTS = 50


def clean_agents(agents) -> dict:
    """The project's own agents: each checked as a workspace agent file's frontmatter is, a 400 naming
    `agents.<name>`."""
    if not isinstance(agents, dict) or len(agents) > MAX_PROJECT_AGENTS:
        raise ValidationError(
            {"agents": [f"Must be a mapping of at most {MAX_PROJECT_AGENTS} agents by name."]}
        )
    for name, fields in agents.items():
        if not isinstance(fields, dict):
            raise ValidationError({f"agents.{name}": ["Must be a mapping of fields."]})
        try:
            clean_agent_fields(str(name), fields, f"agents.{name}")
        except AgentConfigError as exc:
            raise ValidationError({f"agents.{name}": [str(exc).split(": ", 1)[-1]]}) from None
    return agents


def clean_repo_fields(values: dict) -> dict:
    """The repository URL is checked here (scheme, no credentials in it, a public host unless the operator
    allows private ones) so a bad one fails at save time, and again by host-side git before every fetch."""
    from django.conf import settings

    from sandbox import gitops

    if values.get("repo_url"):
        try:
            gitops.check_url(values["repo_url"], allow_private=settings.HANGAR_REPO_ALLOW_PRIVATE_HOSTS)
        except gitops.GitError as exc:
            raise ValidationError({"repo_url": [str(exc)]}) from None
    if values.get("repo_default_branch") and not gitops.valid_ref_name(values["repo_default_branch"]):
        raise ValidationError({"repo_default_branch": ["Not a valid branch name."]})
    if "repo_username" in values and not re.fullmatch(r"[\w.@+-]{0,100}", values["repo_username"] or ""):
        raise ValidationError({"repo_username": ["Letters, digits and . @ + - _ only."]})
    return values


def clean_env_name(name: str) -> str:
    if not isinstance(name, str) or not ENV_NAME.match(name):
        raise ValidationError({"name": ["Must match [A-Za-z_][A-Za-z0-9_]*, at most 128 characters."]})
    return name


MAX_SCOPE_ENTRIES = 20
MIN_SECRET_CHARS = 6  # shorter values cannot be masked without masking ordinary output too
MCP_SERVER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def clean_secret_scope(scope, *, value: str | None = None) -> dict:
    """{"setup": bool, "commands": [bash pattern...], "mcp": [server name...]}: where a secret env var may
    go. A value given to any process must be long enough to be masked in output (MIN_SECRET_CHARS)."""
    if not isinstance(scope, dict):
        raise ValidationError({"scope": ['Must be an object: {"setup", "commands", "mcp"}.']})
    unknown = set(scope) - {"setup", "commands", "mcp"}
    if unknown:
        raise ValidationError({f"scope.{sorted(unknown)[0]}": ["Unknown field."]})
    setup = scope.get("setup", False)
    if not isinstance(setup, bool):
        raise ValidationError({"scope.setup": ["Must be true or false."]})
    cleaned: dict = {"setup": setup}
    for key, check, hint in (
        (
            "commands",
            lambda s: 0 < len(s) <= 200 and "\n" not in s,
            "a bash command pattern, e.g. npm publish *",
        ),
        ("mcp", MCP_SERVER_NAME.match, "an MCP server name (letters, digits, _ . -; at most 64)"),
    ):
        entries = scope.get(key, [])
        if not isinstance(entries, list) or len(entries) > MAX_SCOPE_ENTRIES:
            raise ValidationError(
                {f"scope.{key}": [f"Must be a list of at most {MAX_SCOPE_ENTRIES} entries."]}
            )
        items: list[str] = []
        for index, entry in enumerate(entries):
            if not isinstance(entry, str) or not check(entry.strip()):
                raise ValidationError({f"scope.{key}[{index}]": [f"Must be {hint}."]})
            if entry.strip() not in items:
                items.append(entry.strip())
        cleaned[key] = items
    if any(p.strip("* ") == "" for p in cleaned["commands"]):
        raise ValidationError(
            {"scope.commands": ["A pattern must name a command: `*` alone gives it to all."]}
        )
    scoped = cleaned["setup"] or cleaned["commands"] or cleaned["mcp"]
    if scoped and value is not None and len(value) < MIN_SECRET_CHARS:
        raise ValidationError(
            {
                "scope": [
                    f"A secret shorter than {MIN_SECRET_CHARS} characters cannot be masked in output, "
                    "so it cannot be given to a process."
                ]
            }
        )
    return cleaned
