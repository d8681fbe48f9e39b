"""The host queues' names and their tasks' names (host_tasks.py), for whoever sends them without importing
the tasks (hangar.engine.workspace.remote, beat's sweeps in hangar.engine.tasks)."""

ACQUIRE = "hangar.host.sandbox_acquire"
HIBERNATE = "hangar.host.sandbox_hibernate"
DESTROY = "hangar.host.sandbox_destroy"
REAP = "hangar.host.reap_sandboxes"
WATERMARK = "hangar.host.sandbox_watermark"
EGRESS_DENIALS = "hangar.host.egress_denials"
LOCATE = "hangar.host.sandbox_locate"
HIBERNATE_IDLE = "hangar.host.hibernate_idle"
CHECKPOINT = "hangar.host.workspace_checkpoints"


_PREFIX = "host."


def host_queue(name: str) -> str:
    """The Celery queue of sandbox host `name`'s service."""
    return f"{_PREFIX}{name}"


def is_host_queue(queue: str) -> bool:
    return queue.startswith(_PREFIX)
