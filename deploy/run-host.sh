#!/usr/bin/env bash
# A sandbox host's service (docs/scale-out.md, "The seam: three roles"): a Celery worker consuming only this
# host's queue, host.<HANGAR_SANDBOX_HOST> (default the hostname), on the machine whose Docker engine and
# sandbox root (HANGAR_SANDBOX_ROOT) hold the sandboxes. Engine workers without Docker
# (HANGAR_SANDBOX_REMOTE=1) send it their sessions' create, claim, resume, preparation, hibernate and
# destroy (hangar.engine.workspace.host_tasks) and reach the agents over the TCP channel, so it runs with
# HANGAR_AGENT_TRANSPORT=tcp. It registers the host and heart-beats for it, and keeps its warm pool.
# Extra arguments go to Celery (e.g. --concurrency 32; default 16 threads: each acquisition holds one
# while it creates a container, clones or runs a setup script).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export HANGAR_DB_POOL_MAX=${HANGAR_DB_POOL_MAX:-10}
export HANGAR_AGENT_TRANSPORT=${HANGAR_AGENT_TRANSPORT:-tcp}
host=${HANGAR_SANDBOX_HOST:-$(hostname)}
exec "${HANGAR_PYTHON:-.venv/bin/python}" -m celery -A hangar worker --pool threads -Q "host.$host" \
  --concurrency 16 --loglevel "${HANGAR_LOG_LEVEL:-INFO}" --hostname "host-$$@%h" "$@"
