"""Cached environments (issue 28 item 5): the key a setup script's result is kept under, and the org's
list of them. The layers themselves are the sandbox library's (sandbox.env_cache).

The key is a digest of everything the result depends on: the project, the repository URL and commit (none
without a repository), the setup script, the id of the image the sandbox runs (a tag rebuilt to another
image is another key) and the env the script runs with (sandbox-safe vars and the secrets scoped to setup:
a rotated token rebuilds). Only a Docker sandbox has layers; any other (a test's local one) has no key."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from hangar.accounts.actors import Actor
from hangar.accounts.models import Role
from hangar.accounts.selectors import require_role
from hangar.audit.services import audit_record
from hangar.engine.agents.secret_env import setup_env
from hangar.errors import NotFound
from hangar.logging import get_logger
from hangar.projects.env import env_for_sandbox
from hangar.projects.models import Project
from sandbox import env_cache
from sandbox.gitops.layers import remove_layer
from sandbox.protocol import Sandbox

log = get_logger(__name__)


@dataclass(frozen=True)
class EnvKey:
    key: str
    info: dict[str, Any]  # what the console shows of it (never the env: only its digest is in the key)


def _image_id(box: Sandbox) -> tuple[str, str] | None:
    from sandbox.docker_backend import DockerSandbox
    from sandbox.manager import DockerSandboxes

    owner = box.manager if isinstance(box, DockerSandbox) else None
    if not isinstance(box, DockerSandbox) or not isinstance(owner, DockerSandboxes):
        return None
    name = box.spec.image or owner.image
    try:
        return name, str(owner.client.images.get(name).id)
    except Exception:  # an image Docker cannot describe: no cache rather than a wrong one
        log.info("env_cache_image_unknown", image=name)
        return None


def env_key(project: Project, box: Sandbox, repo_url: str, commit: str) -> EnvKey | None:
    image = _image_id(box)
    if image is None or not project.setup_script.strip():
        return None
    env = {**env_for_sandbox(project), **setup_env(project)}
    network = sorted(project.setup_network_allowlist or [])  # what the script could reach changes its result
    parts = [project.pk, repo_url, commit, project.setup_script, image[1], sorted(env.items()), network]
    key = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:40]
    script = hashlib.sha256(project.setup_script.encode()).hexdigest()[:12]
    info = {
        "project": project.pk,
        "repo_url": repo_url,
        "commit": commit,
        "image": image[0],
        "script": script,
    }
    return EnvKey(key, info)


def environments_of(org_id: int, project_id: int | None = None) -> list[dict[str, Any]]:
    """The org's cached environments (optionally one project's), most recently used first."""
    kept = env_cache.listing(str(org_id))
    return [e for e in kept if project_id is None or e.get("project") == project_id]


class EnvironmentInUse(Exception):
    """Sessions stand on the environment: it is removed once none does (pruning), not under them."""


def environment_delete(*, actor: Actor, project: Project, key: str) -> None:
    """Remove one of the project's cached environments (an admin's): the next session runs the setup script
    again. NotFound for a key that is not the project's; EnvironmentInUse while a session stands on it."""
    require_role(actor, project.org_id, Role.ADMIN)
    if not any(e["key"] == key for e in environments_of(project.org_id, project.pk)):
        raise NotFound()
    if not remove_layer(env_cache.layer_path(key)):
        raise EnvironmentInUse()
    with transaction.atomic():  # the change is on the host's disk: the audit row is the whole transaction
        audit_record(
            actor=actor,
            action="project.environment_delete",
            target=project,
            org_id=project.org_id,
            data={"project": project.pk, "key": key},
        )
