"""Fan-out of event notifications to channel-layer groups, callable from sync code (services, workers).

The engine publishes several events per agent step from worker threads. `async_to_sync(group_send)`
builds event-loop machinery on every call (and channels_redis keeps one layer + connection per loop), so
from sync code we PUBLISH the exact bytes `RedisPubSubChannelLayer.group_send` would: the layer's own
serializer (msgpack) on the Redis channel `<prefix>__group__<group>` of the group's shard. One pipelined
round trip covers all groups of an event. Any other layer backend falls back to `async_to_sync`.

A failed broadcast is logged and swallowed: the event is already durable in Postgres, and readers fill
sequence gaps from there.
"""

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


def send_to_groups(groups: list[str], message: dict) -> None:
    """Send one raw channel-layer message (with its `type`) to each group, from sync code."""
    send_many_to_groups(groups, [message])


def send_many_to_groups(groups: list[str], messages: list[dict]) -> None:
    """Send raw channel-layer messages, in order, to each group: one pipelined round trip per shard."""
    layer = get_channel_layer()
    if not isinstance(layer, RedisPubSubChannelLayer):
        for message in messages:
            for group in groups:
                async_to_sync(layer.group_send)(group, message)
        return
    clients = _shard_clients(layer)
    bodies = [layer.serialize(message) for message in messages]
    by_shard: dict[int, list[str]] = {}
    for group in groups:
        channel = _group_channel(layer, group)
        by_shard.setdefault(_consistent_hash(channel, len(clients)), []).append(channel)
    for index, channels in by_shard.items():
        if len(channels) == 1 and len(bodies) == 1:
            clients[index].publish(channels[0], bodies[0])
            continue
        pipe = clients[index].pipeline(transaction=False)
        for body in bodies:  # message order is kept per channel: readers see seqs in order
            for channel in channels:
                pipe.publish(channel, body)
        pipe.execute()


def broadcast(groups: list[str], message: dict) -> None:
    """Notify `groups` of one event (`{"seq", "type", "payload", "session", "ephemeral"?}`)."""
    broadcast_many(groups, [message])


def broadcast_many(groups: list[str], messages: list[dict]) -> None:
    """Notify `groups` of several events of one session, in order, in one round trip."""
    try:
        send_many_to_groups(groups, [{"type": EVENT, "event": message} for message in messages])
    except Exception:  # a lost notification is recovered by seq gap-fill from Postgres
        log.warning("broadcast_failed", groups=groups, seqs=[m.get("seq") for m in messages], exc_info=True)
