"""Fan-out of event notifications to channel-layer groups, callable from sync code (services, workers).

The engine publishes several events per agent step from worker threads. `async_to_sync(group_send)`
builds event-loop machinery on every call (and channels_redis keeps one layer + connection per loop), so
from sync code we PUBLISH the exact bytes `RedisPubSubChannelLayer.group_send` would: the layer's own
serializer (msgpack) on the Redis channel `<prefix>__group__<group>` of the group's shard. One pipelined
round trip covers all groups of an event. Any other layer backend falls back to `async_to_sync`.

Broadcasts are handed to one sender thread per process and sent from there, so an agent step never
waits on Redis (~0.5 ms a round trip, five or so per step). One FIFO and one sender keep every
session's events in order, and whatever queued up while a send was in flight goes in the next single
pipelined round trip. A failed broadcast is logged and swallowed: the event is already durable in
Postgres, and readers fill sequence gaps from there.
"""

import atexit
import os
import queue
import threading

import redis
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels_redis.pubsub import RedisPubSubChannelLayer
from channels_redis.utils import _consistent_hash, decode_hosts

from hangar.logging import get_logger

log = get_logger(__name__)

EVENT = "hangar.event"

_lock = threading.Lock()
_shards: list[redis.Redis] | None = None
_shards_layer = None


def _shard_clients(layer: RedisPubSubChannelLayer) -> list[redis.Redis]:
    """One thread-safe sync client per configured host, built once per layer object."""
    global _shards, _shards_layer
    if _shards is not None and _shards_layer is layer:
        return _shards
    with _lock:
        if _shards is None or _shards_layer is not layer:
            clients = []
            for host in decode_hosts(layer._kwargs.get("hosts")):
                host = dict(host)
                # redis-py 8 defaults (5 s socket timeout, 100 connections) are wrong for long-lived fan-out.
                host.setdefault("socket_timeout", None)
                host.setdefault("max_connections", 1000)
                address = host.pop("address", None)
                if address:
                    clients.append(redis.Redis.from_url(address, **host))
                else:
                    clients.append(redis.Redis(**host))
            _shards, _shards_layer = clients, layer
    return _shards


def _group_channel(layer: RedisPubSubChannelLayer, group: str) -> str:
    return f"{layer._kwargs.get('prefix', 'asgi')}__group__{group}"


def send_batch_to_groups(batch: list[tuple[list[str], list[dict]]]) -> None:
    """Send each (groups, messages) of `batch`, in order; one pipelined round trip per shard for all."""
    layer = get_channel_layer()
    if not isinstance(layer, RedisPubSubChannelLayer):
        for groups, messages in batch:
            for message in messages:
                for group in groups:
                    async_to_sync(layer.group_send)(group, message)
        return
    clients = _shard_clients(layer)
    by_shard: dict[int, list[tuple[str, bytes]]] = {}
    for groups, messages in batch:
        bodies = [layer.serialize(message) for message in messages]
        channels = [_group_channel(layer, group) for group in groups]
        for body in bodies:  # message order is kept per channel: readers see seqs in order
            for channel in channels:
                by_shard.setdefault(_consistent_hash(channel, len(clients)), []).append((channel, body))
    for index, sends in by_shard.items():
        if len(sends) == 1:
            clients[index].publish(*sends[0])
            continue
        pipe = clients[index].pipeline(transaction=False)
        for channel, body in sends:
            pipe.publish(channel, body)
        pipe.execute()


def broadcast(groups: list[str], message: dict) -> None:
    """Notify `groups` of one event (`{"seq", "type", "payload", "session", "ephemeral"?}`)."""
    broadcast_many(groups, [message])


def broadcast_many(groups: list[str], messages: list[dict]) -> None:
    """Notify `groups` of several events of one session, in order, without waiting for Redis."""
    _sender().put((groups, [{"type": EVENT, "event": message} for message in messages]))


_outbox: queue.SimpleQueue = queue.SimpleQueue()
_sender_pid = 0
_sender_lock = threading.Lock()
MAX_BATCH = 500  # notifications per round trip


def _sender() -> queue.SimpleQueue:
    global _sender_pid
    if _sender_pid != os.getpid():  # first use, or a forked child: its parent's thread did not come along
        with _sender_lock:
            if _sender_pid != os.getpid():
                threading.Thread(target=_send_forever, name="broadcast-sender", daemon=True).start()
                _sender_pid = os.getpid()
    return _outbox


def _send_forever() -> None:
    while True:
        _send_batch([_outbox.get()])


def _send_batch(batch: list) -> None:
    """Send `batch` and whatever else is queued (up to MAX_BATCH): one pipeline per shard for all of it."""
    while len(batch) < MAX_BATCH:
        try:
            batch.append(_outbox.get_nowait())
        except queue.Empty:
            break
    try:
        send_batch_to_groups(batch)
    except Exception:  # a lost notification is recovered by seq gap-fill from Postgres
        log.warning("broadcast_failed", events=sum(len(m) for _g, m in batch), exc_info=True)


@atexit.register
def flush() -> None:
    """At exit, send what is still queued (best effort: the sender thread may hold one batch in flight,
    and whatever is lost is still in Postgres for readers' gap-fill)."""
    while True:
        try:
            item = _outbox.get_nowait()
        except queue.Empty:
            return
        _send_batch([item])
