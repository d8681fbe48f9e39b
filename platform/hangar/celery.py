"""The Celery app. Workers run with an I/O-bound pool (threads): an agent session spends most of its
life waiting on the LLM, so one process carries many sessions (see deploy/run-worker.sh)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hangar.settings")

app = Celery("hangar")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

from hangar import celery_pool  # noqa: E402, F401  (its worker_init hook picks the workers' pool)
from hangar.schedule import BEAT_SCHEDULE  # noqa: E402

app.conf.beat_schedule = BEAT_SCHEDULE


@app.task(name="hangar.health.ping")
def ping() -> str:
    """Health task: a worker answering it proves the broker and a worker are alive."""
    return "pong"
