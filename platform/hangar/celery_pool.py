"""The workers' thread pool, waking the worker's event loop when a thread frees.

With `worker_disable_prefetch` (settings: a worker takes a task only when it has a free thread), the
worker stops reading the queue while every thread is busy. A thread that finishes a task tells nobody:
the event loop sleeps in its poll until its next timer, and the task waiting in Redis waits with it
(another org's first step came late behind a flood: tests/engine/test_org_fairness.py). Here each
finished task wakes the loop, which then reads the queue again at once.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from celery import signals
from celery.concurrency.thread import TaskPool
from kombu.asynchronous import get_event_loop


class WakingThreadPool(TaskPool):
    """Celery's thread pool; each task's end (after Celery marks it ready) wakes the event loop."""

    def on_apply(self, *args: Any, **kwargs: Any) -> Any:
        result = super().on_apply(*args, **kwargs)
        result.f.add_done_callback(_wake_event_loop)
        return result


def _wake_event_loop(_done: Future) -> None:
    hub = get_event_loop()
    if hub is not None:  # thread-safe: call_soon writes to the loop's waker when it sleeps
        hub.call_soon(_nothing)


def _nothing() -> None:
    """The wake-up itself is the point: the loop's next pass re-reads the queue if a thread is free."""


@signals.worker_init.connect
def _use_waking_thread_pool(sender: Any, **_: Any) -> None:
    """`--pool threads` (deploy/run-worker.sh) names Celery's class; the worker resolves it after this
    signal, so swapping it here keeps the command line as it is."""
    if getattr(sender, "pool_cls", None) is TaskPool:
        sender.pool_cls = WakingThreadPool
