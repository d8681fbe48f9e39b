"""Project env vars as a sandbox may see them. Secret values never leave the worker."""

from hangar.projects import crypto
from hangar.projects.models import Project


def env_for_sandbox(project: Project) -> dict[str, str]:
    """Only the vars a project admin marked sandbox-safe (secret=False)."""
    return {var.name: crypto.decrypt(var.value_encrypted) for var in project.env_vars.filter(secret=False)}
