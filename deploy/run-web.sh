#!/usr/bin/env bash
# The web process: Daphne serving HTTP (DRF, the OpenCode routes, SSE) and WebSockets. Arguments go to
# Daphne (default: -b 0.0.0.0 -p ${PORT:-8000}); HANGAR_PYTHON picks the interpreter (default the venv's).
# deploy/up.sh, bench/agent_step.py and the live tests (tests/opencode/live.py) all start the web this way.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# Under ASGI, Django runs each request's sync code in a thread of its own (asgiref's ThreadSensitiveContext),
# so a thread-local persistent connection (CONN_MAX_AGE) is never reused: every request opened a Postgres
# backend (~5 ms of this process' CPU per request, measured). The psycopg pool is shared by all threads.
# A request holds a connection for a few ms and the async views (SSE, blocking prompt) give theirs back
# between queries, so 10 serve this process; Postgres allows 100 here and each worker process takes up to 20.
export HANGAR_DB_POOL_MAX=${HANGAR_DB_POOL_MAX:-10}
[ $# -gt 0 ] || set -- -b 0.0.0.0 -p "${PORT:-8000}"
exec "${HANGAR_PYTHON:-.venv/bin/python}" -m daphne "$@" hangar.asgi:application
