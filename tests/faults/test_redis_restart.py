"""A restart of Redis (the Celery broker and the channel layer) while a session runs: the run goes on,
the session finishes, and a client watching through the restart gets every stored event once. The Redis
is a private one (tests/private_services.py); the machine's shared Redis is never touched."""

import pytest
import redis

from hangar.celery import app
from hangar.engine.services import session_prompt
from tests.engine.conftest import QUEUE, text_of, text_prompt, tool_parts, wait_for, wait_idle
from tests.faults.checks import (
    LiveClient,
    assert_live_client_got_everything,
    assert_nothing_busy,
    assert_sound_log,
    assert_stream_resumes,
    bash,
    seq_now,
)
from tests.private_services import PrivateRedis

pytestmark = [pytest.mark.faults, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def private_redis(settings):
    """A Redis of our own, for this process's channel layer and Celery producer as for the worker's."""
    server = PrivateRedis().start()
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": [{"address": server.url, "socket_timeout": None, "max_connections": 1000}]},
        }
    }
    broker = app.conf.broker_url
    app.conf.broker_url = server.url
    app._pool, app.amqp._producer_pool = None, None  # built again, lazily, from broker_url
    yield server
    app.conf.broker_url = broker
    app._pool, app.amqp._producer_pool = None, None
    server.stop()


def test_a_redis_restart_mid_run_loses_no_event_and_the_session_finishes(
    alice, script, make_session, start_worker, private_redis
):
    start_worker(beat=True, env={"REDIS_URL": private_redis.url, "CELERY_BROKER_URL": private_redis.url})
    script_id = script.load([[{"text": "Running it."}, bash("c1", "sleep 2")], [{"text": "and done"}]])
    session = make_session(alice, script_id)
    client = LiveClient(alice, session)
    try:
        session_prompt(actor=alice.actor, session=session, parts=text_prompt("run something"))
        wait_for(
            lambda: any(p["state"]["status"] == "running" for p in tool_parts(session)), what="bash running"
        )
        restarted_at = seq_now(session)
        # Down for longer than the command: the step's closing events are stored while Redis is away.
        private_redis.restart(down_s=3)
        session = wait_idle(session, timeout=45)

        assert text_of(session) == "Running it.and done"
        assert tool_parts(session)[0]["state"]["status"] == "completed"
        assert_sound_log(session)
        assert_live_client_got_everything(client, session)
    finally:
        client.stop()
    assert_stream_resumes(alice, session, after=restarted_at)
    assert_nothing_busy()


def test_a_run_request_lost_with_a_redis_restart_is_sent_again(
    alice, script, make_session, start_worker, private_redis
):
    """Redis keeps its queue in memory only: a run request waiting there when it restarts is gone. The
    session's run_requested flag is the durable request; beat's recovery sends it again once stale."""
    session = make_session(alice, script.load([[{"text": "ran after all"}]]))
    session_prompt(actor=alice.actor, session=session, parts=text_prompt("hello"))  # no worker yet
    queued = redis.Redis.from_url(private_redis.url)
    assert queued.llen(QUEUE) >= 1  # the run request (and the webhooks fan-out of session.created)
    private_redis.restart(down_s=0.5)
    assert queued.llen(QUEUE) == 0  # the request is lost

    start_worker(beat=True, env={"REDIS_URL": private_redis.url, "CELERY_BROKER_URL": private_redis.url})
    session = wait_idle(session, timeout=75)  # the 30 s stale period, then one beat tick

    assert text_of(session) == "ran after all"
    assert_sound_log(session)
    assert_stream_resumes(alice, session, after=0)
    assert_nothing_busy()
