#!/usr/bin/env bash
# Bring the whole platform up on this machine and run it in the foreground:
# set-up (deps, Postgres, Redis, Docker, sandbox image, schema), a demo org/user/project on first run,
# then Daphne (web + WebSockets), a Celery worker and Celery beat with their logs. Ctrl-C stops all.
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/setup.sh

PORT=${PORT:-8000}
export HANGAR_PUBLIC_URL=${HANGAR_PUBLIC_URL:-http://127.0.0.1:$PORT}
PY=.venv/bin/python
# platform/ is a source root, not a package (it would shadow the stdlib `platform`): put it on the path.
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"

# Demo tenant. bootstrap is idempotent; it mints a fresh API token each run (tokens are shown once).
boot_args=(--json --email "${HANGAR_DEMO_EMAIL:-demo@hangar.local}" --org demo --project demo)
LOCAL_MODEL=0
if [ -n "${HANGAR_MODEL_API_BASE:-}" ]; then
  boot_args+=(--api-base "$HANGAR_MODEL_API_BASE" --model "${HANGAR_MODEL:-gpt-4o-mini}")
  [ -n "${HANGAR_MODEL_API_KEY:-}" ] && boot_args+=(--api-key "$HANGAR_MODEL_API_KEY")
elif [ "${HANGAR_LOCAL_MODEL:-1}" = 1 ]; then
  # No provider given: the demo project talks to the offline Gemma model served below.
  LOCAL_MODEL=1
  boot_args+=(--api-base "http://127.0.0.1:${HANGAR_LOCAL_MODEL_PORT:-8081}/v1" --model gemma-3-270m)
fi
boot=$($PY manage.py bootstrap "${boot_args[@]}")
echo "$boot" > var/bootstrap.json

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "[up] stopping..."
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap stop INT TERM EXIT

# Offline local model when no provider endpoint is configured (deploy/local-model.sh; first run
# compiles llama-cpp-python, ~6 min on 2 cores). HANGAR_LOCAL_MODEL=0 skips it.
if [ $LOCAL_MODEL = 1 ]; then
  ./deploy/local-model.sh 2>&1 | sed -u 's/^/[model] /' &
  pids+=($!)
fi

./deploy/run-web.sh -b 0.0.0.0 -p "$PORT" 2>&1 | sed -u 's/^/[web] /' &
pids+=($!)
./deploy/run-worker.sh 2>&1 | sed -u 's/^/[worker] /' &
pids+=($!)
$PY -m celery -A hangar beat --loglevel INFO --schedule var/celerybeat-schedule 2>&1 | sed -u 's/^/[beat] /' &
pids+=($!)

$PY - "$boot" <<'PYEOF'
import json, sys
b = json.loads(sys.argv[1])
print(f"""
  Hangar is up:   {b['url']}        (admin: {b['url']}/admin/, API docs: {b['url']}/api/docs/)
  Login:          {b.get('email')} / {b.get('password') or '(password set on first run; see var/bootstrap.json history)'}
  API token:      {b['token']}
  OpenCode URL:   {b.get('opencode_url')}
                  opencode run --attach {b.get('opencode_url')} -p {b['token']} "hello"
  Ctrl-C stops everything.
""", flush=True)
PYEOF
wait -n "${pids[@]}"
