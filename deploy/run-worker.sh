#!/usr/bin/env bash
# Celery worker processes carrying many agent sessions: an agent session spends most of its life
# waiting on the LLM, so the pool is threads, not prefork (one LiteLLM import, ~170 MB, per process).
# One process is bound by the GIL (its CPU per agent step: bench/step_cpu.py, bench/agent_load.py). Measured with
# bench/agent_load.py (100 sessions, 2 s model calls, 2 cores): one process p99 84-114 ms at 322 MB; two
# processes of 50 threads p99 77-81 ms at 618 MB. HANGAR_WORKER_PROCESSES=N (default 1)
# starts N such processes on this host, e.g. one per core, each with HANGAR_WORKER_CONCURRENCY threads.
# Repository work (clone, setup script, push, pull: minutes) has a queue of its own
# (HANGAR_REPO_QUEUE, default "<engine queue>.repo") and one more process consuming it with
# HANGAR_REPO_WORKER_CONCURRENCY threads (default 8), so a slow clone never takes an agent step's thread;
# HANGAR_REPO_WORKER_CONCURRENCY=0 makes the engine's processes consume it instead.
# Outbound webhook deliveries wait on other people's servers: the same, on their own queue
# (HANGAR_WEBHOOKS_QUEUE, default "<engine queue>.webhooks"; hangar.integrations.queue) and a process of
# HANGAR_WEBHOOKS_WORKER_CONCURRENCY threads (default 16; 0: the engine's processes consume it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# Threads share a bounded psycopg pool per process: Postgres allows 100 connections here in all.
export HANGAR_DB_POOL_MAX=${HANGAR_DB_POOL_MAX:-20}
engine_queue=${HANGAR_ENGINE_QUEUE:-celery}
repo_queue=${HANGAR_REPO_QUEUE:-$engine_queue.repo}
repo_concurrency=${HANGAR_REPO_WORKER_CONCURRENCY:-8}
webhooks_queue=${HANGAR_WEBHOOKS_QUEUE:-$engine_queue.webhooks}
webhooks_concurrency=${HANGAR_WEBHOOKS_WORKER_CONCURRENCY:-16}
queues=$engine_queue
[ "$repo_concurrency" -gt 0 ] || queues="$queues,$repo_queue"
[ "$webhooks_concurrency" -gt 0 ] || queues="$queues,$webhooks_queue"
processes=${HANGAR_WORKER_PROCESSES:-1}
worker() {  # NAME QUEUES CONCURRENCY [celery args]; exec: in the background its subshell (so $! is Celery)
  exec "${HANGAR_PYTHON:-.venv/bin/python}" -m celery -A hangar worker --pool threads -Q "$2" \
    --concurrency "$3" --loglevel "${HANGAR_LOG_LEVEL:-INFO}" --hostname "worker-$$-$1@%h" "${@:4}"
}
pids=()
if [ "$repo_concurrency" -gt 0 ]; then
  worker repo "$repo_queue" "$repo_concurrency" "$@" &
  pids+=($!)
fi
if [ "$webhooks_concurrency" -gt 0 ]; then
  worker webhooks "$webhooks_queue" "$webhooks_concurrency" "$@" &
  pids+=($!)
fi
for i in $(seq 1 "$processes"); do
  worker "$i" "$queues" "${HANGAR_WORKER_CONCURRENCY:-100}" "$@" &
  pids+=($!)
done
# Forward stop signals to every process (Celery's warm shutdown on TERM), then wait for all of them.
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' TERM INT
wait "${pids[@]}" || wait "${pids[@]}"  # a trapped signal interrupts the first wait: wait for the shutdown
