"""Sync ORM work called from the async views that outlive their queries (the SSE stream, the blocking
prompt). Django gives a pooled connection back only at request_finished, when the response ends: an SSE
client would hold one of the web process' few connections (deploy/run-web.sh) for as long as it listens."""

from asgiref.sync import sync_to_async

from hangar.engine.session.dbconn import release_connection


def db(fn):
    """`await db(fn)(...)`: fn in the request's sync thread, then its connection goes back to the pool
    (without a pool, or inside a transaction, the connection is kept: see release_connection)."""

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            release_connection()

    return sync_to_async(call)
