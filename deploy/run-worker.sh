#!/usr/bin/env bash
# One Celery worker process carrying many agent sessions: an agent session spends most of its life
# waiting on the LLM, so the pool is threads, not prefork (one LiteLLM import, ~170 MB, per process).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# 100 threads share a bounded psycopg pool: Postgres allows 100 connections here in all.
export HANGAR_DB_POOL_MAX=${HANGAR_DB_POOL_MAX:-20}
queue_args=()
[ -n "${HANGAR_ENGINE_QUEUE:-}" ] && queue_args=(-Q "$HANGAR_ENGINE_QUEUE")
exec .venv/bin/python -m celery -A hangar worker --pool threads "${queue_args[@]}" \
  --concurrency "${HANGAR_WORKER_CONCURRENCY:-100}" --loglevel "${HANGAR_LOG_LEVEL:-INFO}" \
  --hostname "worker-$$@%h" "$@"
