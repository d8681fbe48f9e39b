"""A session's sandbox spec: the project's limits, image and network policy, and only its sandbox-safe env
vars (secrets never enter a sandbox). Read by a worker with Docker when it makes the sandbox and by an
engine worker without Docker for the limits its calls are bounded by."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox.protocol import SandboxSpec

if TYPE_CHECKING:
    from hangar.conversations.models import Session


def spec_for(session: Session) -> SandboxSpec:
    from hangar.accounts.selectors import owners_orgs
    from hangar.projects.env import env_for_sandbox
    from hangar.projects.models import NetworkPolicy
    from hangar.projects.validation import sandbox_image_allowed

    project = session.project
    # An image saved before the operator's list (or taken off it since) is not run: the platform's is.
    image = project.sandbox_image if sandbox_image_allowed(project.sandbox_image) else ""
    return SandboxSpec(
        session_id=session.pk,
        org_id=str(session.org_id),
        project_id=str(project.pk),
        image=image or None,
        cpus=project.sandbox_cpus,
        memory_mb=project.sandbox_memory_mb,
        pids=project.sandbox_pids,
        disk_mb=project.sandbox_disk_mb,
        command_timeout_s=project.command_timeout_s,
        network="allowlist" if project.network_policy == NetworkPolicy.ALLOWLIST else "none",
        allowlist=list(project.network_allowlist or []),
        env=env_for_sandbox(project),
        disk_groups=[[str(o) for o in orgs] for orgs in owners_orgs(session.org_id).values()],
    )
