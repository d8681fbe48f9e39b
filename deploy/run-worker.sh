#!/usr/bin/env bash
# Celery worker processes carrying many agent sessions: an agent session spends most of its life
# waiting on the LLM, so the pool is threads, not prefork (one LiteLLM import, ~170 MB, per process).
# One process is bound by the GIL (its CPU per agent step: bench/step_cpu.py, bench/agent_load.py). Measured with
# bench/agent_load.py (100 sessions, 2 s model calls, 2 cores): one process p99 84-114 ms at 322 MB; two
# processes of 50 threads p99 77-81 ms at 618 MB. HANGAR_WORKER_PROCESSES=N (default 1)
# starts N such processes on this host, e.g. one per core, each with HANGAR_WORKER_CONCURRENCY threads.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# Threads share a bounded psycopg pool per process: Postgres allows 100 connections here in all.
export HANGAR_DB_POOL_MAX=${HANGAR_DB_POOL_MAX:-20}
queue_args=()
[ -n "${HANGAR_ENGINE_QUEUE:-}" ] && queue_args=(-Q "$HANGAR_ENGINE_QUEUE")
processes=${HANGAR_WORKER_PROCESSES:-1}
worker() {  # exec: in the foreground it replaces this script, in the background its subshell (so $! is Celery)
  exec "${HANGAR_PYTHON:-.venv/bin/python}" -m celery -A hangar worker --pool threads "${queue_args[@]}" \
    --concurrency "${HANGAR_WORKER_CONCURRENCY:-100}" --loglevel "${HANGAR_LOG_LEVEL:-INFO}" \
    --hostname "worker-$$-$1@%h" "${@:2}"
}
if [ "$processes" -le 1 ]; then
  worker 0 "$@"
fi
pids=()
for i in $(seq 1 "$processes"); do
  worker "$i" "$@" &
  pids+=($!)
done
# Forward stop signals to every process (Celery's warm shutdown on TERM), then wait for all of them.
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true' TERM INT
wait "${pids[@]}" || wait "${pids[@]}"  # a trapped signal interrupts the first wait: wait for the shutdown
