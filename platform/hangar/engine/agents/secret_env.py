"""Which secret env vars a process gets, and the masker for a session's output (issue 28).

A secret reaches a process only through that process's own env (the agent's exec `env`, never the
container's env, never a file): the setup script gets the secrets scoped `setup`; a bash command gets a
secret when every simple command in it (hangar.engine.agents.shell_parse, the parse the `bash` permission uses)
matches one of the secret's command patterns (the permission wildcard: `npm publish *`), so `npm publish
&& curl …` gets nothing; an MCP server gets those that name it. Every secret of the project, scoped or
not, is masked in whatever the run stores or sends (hangar.engine.agents.masking)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime

from hangar.engine.agents import shell_parse
from hangar.engine.agents.masking import Masker
from hangar.engine.agents.permissions import match
from hangar.projects.env import project_secrets, secrets_for_mcp, secrets_for_setup
from hangar.projects.models import Project

__all__ = ["command_env", "masker_for", "mcp_env", "setup_env"]

_maskers: OrderedDict[tuple[int, datetime], Masker] = OrderedDict()
_lock = threading.Lock()


def masker_for(project: Project) -> Masker:
    """The project's masker, built once per policy stamp (a regex over every secret's needles)."""
    key = (project.pk, project.updated_at)
    with _lock:
        found = _maskers.get(key)
        if found is not None:
            _maskers.move_to_end(key)
            return found
    masker = Masker(s.value for s in project_secrets(project))
    with _lock:
        _maskers[key] = masker
        while len(_maskers) > 256:
            _maskers.popitem(last=False)
    return masker


def command_env(project: Project, command: str, cwd: str | None) -> dict[str, str]:
    """The secrets `command` may have: those whose patterns cover every simple command of it."""
    secrets = [s for s in project_secrets(project) if s.commands]
    if not secrets:
        return {}
    patterns = shell_parse.check(command, cwd).patterns
    if not patterns:
        return {}
    return {
        s.name: s.value
        for s in secrets
        if all(any(match(rule, pattern) for rule in s.commands) for pattern in patterns)
    }


def setup_env(project: Project) -> dict[str, str]:
    return secrets_for_setup(project)


def mcp_env(project: Project, server: str) -> dict[str, str]:
    """For the MCP client: the env to start the project's server `server` with (its scoped secrets)."""
    return secrets_for_mcp(project, server)
