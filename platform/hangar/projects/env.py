"""Project env vars as a sandbox may see them. Secret values never leave the worker."""

from hangar.projects import crypto
from hangar.projects.models import Project
from hangar.rawsql import run

# Read when a run first reaches its sandbox (every run of every session): prepared, no ORM query building.
_SANDBOX_SAFE = (
    "SELECT name, value_encrypted FROM projects_projectenvvar WHERE project_id = %s AND NOT secret"
)


def env_for_sandbox(project: Project) -> dict[str, str]:
    """Only the vars a project admin marked sandbox-safe (secret=False)."""
    return {name: crypto.decrypt(value) for name, value in run(_SANDBOX_SAFE, [project.pk])}
