"""The Celery queues of integration tasks. HANGAR_INTEGRATIONS_QUEUE, else the engine's (so a worker
started for the engine, tests' included, carries them too), for the quick ones (a fan-out writes rows).
Webhook deliveries wait on other people's servers: they have a queue of their own, HANGAR_WEBHOOKS_QUEUE
(default `<engine queue>.webhooks`), consumed by a worker process of its own (deploy/run-worker.sh), so a
slow endpoint never holds a thread an agent step is waiting for. Imported by every integration's tasks."""

import os

from celery import current_app

DELIVER_TASK = "hangar.integrations.webhooks.deliver"
QUEUE = os.environ.get("HANGAR_INTEGRATIONS_QUEUE") or os.environ.get("HANGAR_ENGINE_QUEUE", "celery")
_ENGINE = os.environ.get("HANGAR_ENGINE_QUEUE") or "celery"
WEBHOOKS_QUEUE = os.environ.get("HANGAR_WEBHOOKS_QUEUE") or f"{_ENGINE}.webhooks"
# An exact name is matched before a glob (Celery's MapRoute): deliveries go to their own queue.
current_app.conf.task_routes = {
    **(current_app.conf.task_routes or {}),
    DELIVER_TASK: {"queue": WEBHOOKS_QUEUE},
    "hangar.integrations.*": {"queue": QUEUE},
}
