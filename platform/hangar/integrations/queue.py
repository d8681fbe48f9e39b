"""The Celery queue of integration tasks: HANGAR_INTEGRATIONS_QUEUE, else the engine's (so a worker
started for the engine, tests' included, carries them too). Imported by every integration's tasks."""

import os

from celery import current_app

QUEUE = os.environ.get("HANGAR_INTEGRATIONS_QUEUE") or os.environ.get("HANGAR_ENGINE_QUEUE", "celery")
current_app.conf.task_routes = {
    **(current_app.conf.task_routes or {}),
    "hangar.integrations.*": {"queue": QUEUE},
}
