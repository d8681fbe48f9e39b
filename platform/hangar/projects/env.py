"""Project env vars as the worker and the sandbox may see them. Secret values stay in the worker."""

from hangar.projects import crypto
from hangar.projects.models import Project


def env_for_sandbox(project: Project) -> dict[str, str]:
    """Only the vars a project admin marked sandbox-safe (secret=False)."""
    return {var.name: crypto.decrypt(var.value_encrypted) for var in project.env_vars.filter(secret=False)}


def env_for_worker(project: Project) -> dict[str, str]:
    """Every var, secret ones included: for worker-side use only, never passed into a sandbox."""
    return {var.name: crypto.decrypt(var.value_encrypted) for var in project.env_vars.all()}
