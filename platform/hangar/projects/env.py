"""Project env vars as a run may use them. Sandbox-safe (non-secret) ones are the sandbox's env; secret ones
are decrypted only in the worker and handed to the one process their scope names (hangar.engine.agents.secret_env),
never to the container's env or a file."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from hangar.projects import crypto
from hangar.projects.models import Project
from hangar.rawsql import run

# Read when a run first reaches its sandbox (every run of every session): prepared, no ORM query building.
_SANDBOX_SAFE = (
    "SELECT name, value_encrypted FROM projects_projectenvvar WHERE project_id = %s AND NOT secret"
)
_SECRETS = (
    "SELECT name, value_encrypted, scope_setup, scope_commands, scope_mcp FROM projects_projectenvvar "
    "WHERE project_id = %s AND secret ORDER BY name"
)


def env_for_sandbox(project: Project) -> dict[str, str]:
    """Only the vars a project admin marked sandbox-safe (secret=False)."""
    return {name: crypto.decrypt(value) for name, value in run(_SANDBOX_SAFE, [project.pk])}


@dataclass(frozen=True)
class Secret:
    name: str
    value: str
    setup: bool
    commands: tuple[str, ...]
    mcp: tuple[str, ...]


_CACHE_SIZE = 256
_cache: OrderedDict[tuple[int, datetime], tuple[Secret, ...]] = OrderedDict()
_cache_lock = threading.Lock()


def project_secrets(project: Project) -> tuple[Secret, ...]:
    """The project's secret vars, decrypted, with their scopes. Read once per policy stamp (every env var
    write moves the project's `updated_at`, hangar.projects.env_var_services), so a tool call pays no
    statement."""
    key = (project.pk, project.updated_at)
    with _cache_lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return found
    rows = run(_SECRETS, [project.pk])
    secrets = tuple(
        Secret(
            name=name,
            value=crypto.decrypt(value),
            setup=bool(setup),
            commands=_strings(commands),
            mcp=_strings(mcp),
        )
        for name, value, setup, commands, mcp in rows
    )
    with _cache_lock:
        _cache[key] = secrets
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return secrets


def _strings(column: object) -> tuple[str, ...]:
    """A JSON list column as the raw statement returns it (text: Django's psycopg loader leaves jsonb alone)."""
    value = json.loads(column) if isinstance(column, str) else column
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def secrets_for_setup(project: Project) -> dict[str, str]:
    return {s.name: s.value for s in project_secrets(project) if s.setup}


def secrets_for_mcp(project: Project, server: str) -> dict[str, str]:
    """The env of the project's MCP server `server`: the secrets whose scope names it."""
    return {s.name: s.value for s in project_secrets(project) if server in s.mcp}
