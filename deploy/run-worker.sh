#!/usr/bin/env bash
# One Celery worker process carrying many agent sessions: an agent session spends most of its life
# waiting on the LLM, so the pool is threads, not prefork (one LiteLLM import, ~170 MB, per process).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec .venv/bin/python -m celery -A hangar worker --pool threads \
  --concurrency "${HANGAR_WORKER_CONCURRENCY:-100}" --loglevel "${HANGAR_LOG_LEVEL:-INFO}" \
  --hostname "worker-$$@%h" "$@"
