"""The workers' thread pool wakes the worker's event loop as each task ends, so a task waiting for a free
thread is read from the queue at once rather than at the loop's next timer (hangar/celery_pool.py; the
end-to-end figure is tests/engine/test_org_fairness.py's 2 s)."""

import threading
from types import SimpleNamespace

from celery.concurrency.thread import TaskPool
from kombu.asynchronous import Hub, set_event_loop

from hangar.celery_pool import WakingThreadPool, _use_waking_thread_pool


def test_a_finished_task_wakes_the_workers_event_loop():
    hub = Hub()
    set_event_loop(hub)
    woken = threading.Event()
    hub.call_soon = lambda callback, *args: woken.set()  # what a worker thread calls on the loop
    pool = WakingThreadPool(limit=1)
    pool.start()
    try:
        ran = []
        pool.apply_async(lambda: ran.append("task"), callback=lambda _result: ran.append("ready"))
        assert woken.wait(5), "the event loop was not woken when the task ended"
        assert ran == ["task", "ready"]  # woken after Celery's own callback marked the task ready
    finally:
        pool.stop()
        set_event_loop(None)


def test_a_worker_started_with_pool_threads_runs_the_waking_pool():
    worker = SimpleNamespace(pool_cls=TaskPool)
    _use_waking_thread_pool(sender=worker)
    assert worker.pool_cls is WakingThreadPool
    other = SimpleNamespace(pool_cls="prefork")
    _use_waking_thread_pool(sender=other)
    assert other.pool_cls == "prefork"  # only the thread pool is replaced
