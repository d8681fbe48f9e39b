"""Celery tasks of outbound webhooks: fan an event out to deliveries, deliver one (retrying itself with
backoff), and forget old inbound receipts."""

from datetime import timedelta
from functools import partial

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from hangar.integrations import queue  # noqa: F401  (routes this module's tasks)
from hangar.integrations.queue import DELIVER_TASK
from hangar.integrations.webhooks.enqueue import FANOUT_TASK, enqueue_delivery
from hangar.integrations.webhooks.outbound import OrgBusy, deliveries_create, delivery_attempt
from hangar.integrations.webhooks.services import receipts_purge

RECEIPT_TTL = timedelta(minutes=10)  # the verifier refuses anything older than 5 minutes anyway


@shared_task(name=FANOUT_TASK, ignore_result=True)
def webhooks_fanout(session_id: str, event_ids: list[int]) -> int:
    with transaction.atomic():
        created = deliveries_create(session_id, event_ids)
        for delivery_id in created:
            transaction.on_commit(partial(enqueue_delivery, delivery_id))
    return len(created)


@shared_task(name=DELIVER_TASK, ignore_result=True)
def webhooks_deliver(delivery_id: int, manual: bool = False) -> None:
    try:
        delay = delivery_attempt(delivery_id, manual=manual)
    except OrgBusy as busy:  # nothing was sent: the same attempt, a moment later
        enqueue_delivery(delivery_id, manual=manual, countdown=busy.retry_in)
        return
    if delay is not None:
        enqueue_delivery(delivery_id, countdown=delay)


@shared_task(name="hangar.integrations.webhooks.purge_receipts", ignore_result=True)
def webhooks_purge_receipts() -> int:
    return receipts_purge(received_before=timezone.now() - RECEIPT_TTL)
