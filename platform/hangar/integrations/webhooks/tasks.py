"""Celery tasks of outbound webhooks: fan an event out to deliveries, deliver one (retrying itself with
backoff), and forget old inbound receipts."""

from datetime import timedelta
from functools import partial

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from hangar.integrations import queue  # noqa: F401  (routes this module's tasks)

RECEIPT_TTL = timedelta(minutes=10)  # the verifier refuses anything older than 5 minutes anyway


def enqueue_fanout(session_id: str, event_ids: list[int]) -> None:
    webhooks_fanout.apply_async(args=[session_id, event_ids], ignore_result=True)


def enqueue_delivery(delivery_id: int, manual: bool = False, countdown: float | None = None) -> None:
    webhooks_deliver.apply_async(args=[delivery_id, manual], countdown=countdown, ignore_result=True)


@shared_task(name="hangar.integrations.webhooks.fanout", ignore_result=True)
def webhooks_fanout(session_id: str, event_ids: list[int]) -> int:
    from hangar.integrations.webhooks.outbound import deliveries_create

    with transaction.atomic():
        created = deliveries_create(session_id, event_ids)
        for delivery_id in created:
            transaction.on_commit(partial(enqueue_delivery, delivery_id))
    return len(created)


@shared_task(name="hangar.integrations.webhooks.deliver", ignore_result=True)
def webhooks_deliver(delivery_id: int, manual: bool = False) -> None:
    from hangar.integrations.webhooks.outbound import OrgBusy, delivery_attempt

    try:
        delay = delivery_attempt(delivery_id, manual=manual)
    except OrgBusy as busy:  # nothing was sent: the same attempt, a moment later
        enqueue_delivery(delivery_id, manual=manual, countdown=busy.retry_in)
        return
    if delay is not None:
        enqueue_delivery(delivery_id, countdown=delay)


@shared_task(name="hangar.integrations.webhooks.purge_receipts", ignore_result=True)
def webhooks_purge_receipts() -> int:
    from hangar.integrations.webhooks.services import receipts_purge

    return receipts_purge(received_before=timezone.now() - RECEIPT_TTL)
