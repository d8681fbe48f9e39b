"""Fan-out of event notifications to channel-layer groups, callable from sync code (services, workers)."""

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from hangar.logging import get_logger

log = get_logger(__name__)


def broadcast(groups: list[str], message: dict) -> None:
    layer = get_channel_layer()
    for group in groups:
        try:
            async_to_sync(layer.group_send)(group, {"type": "hangar.event", "event": message})
        except Exception:  # a lost notification is recovered by seq gap-fill from Postgres
            log.warning("broadcast_failed", group=group, seq=message.get("seq"), exc_info=True)
