#!/usr/bin/env bash
# Bring the whole platform up on this machine and run it in the foreground:
# set-up (deps, Postgres, Redis, Docker, sandbox image, web app, schema), a demo org/user/project on first
# run, then Daphne (web + WebSockets), a Celery worker, Celery beat and (without a provider) the bundled
# model. It says what it waits for, prints the banner once everything answers, and Ctrl-C or a TERM
# stops every process it started.
#
#   ./deploy/up.sh                    run (the demo password is printed on the first run only)
#   ./deploy/up.sh --reset-password   give the demo user a new password, printed in the banner
set -euo pipefail
cd "$(dirname "$0")/.."
umask 077 # var/bootstrap.json holds a token (and on a first run the password)
RESET=0
for arg in "$@"; do
  case $arg in
    --reset-password) RESET=1 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done
say() { printf '\033[1;34m[up]\033[0m %s\n' "$*"; }
# HANGAR_SKIP_SETUP=1: the machine is already set up (deploy/test.sh ran setup.sh before the tests of up.sh).
[ "${HANGAR_SKIP_SETUP:-0}" = 1 ] || ./deploy/setup.sh

PORT=${PORT:-8000}
MODEL_PORT=${HANGAR_LOCAL_MODEL_PORT:-8081}
export HANGAR_PUBLIC_URL=${HANGAR_PUBLIC_URL:-http://127.0.0.1:$PORT}
PY=.venv/bin/python
# Model endpoints on this machine (the bundled local model on 127.0.0.1) are allowed here, for development;
# a production deployment lists only the private networks its self-hosted models live on.
export HANGAR_MODEL_ALLOWED_NETWORKS=${HANGAR_MODEL_ALLOWED_NETWORKS:-127.0.0.0/8,::1/128}
# platform/ is a source root, not a package (it would shadow the stdlib `platform`): put it on the path.
export PYTHONPATH="$PWD/platform:$PWD${PYTHONPATH:+:$PYTHONPATH}"

# Demo tenant. bootstrap is idempotent; it mints a fresh API token each run (tokens are shown once).
# The model key travels in the environment, never on a command line (ps shows those to every user).
boot_args=(--json --email "${HANGAR_DEMO_EMAIL:-demo@hangar.local}" --org demo --project demo)
[ $RESET = 1 ] && boot_args+=(--reset-password)
LOCAL_MODEL=0
if [ -n "${HANGAR_MODEL_API_BASE:-}" ]; then
  boot_args+=(--api-base "$HANGAR_MODEL_API_BASE" --model "${HANGAR_MODEL:-gpt-4o-mini}")
  [ -n "${HANGAR_MODEL_API_KEY:-}" ] && export HANGAR_BOOTSTRAP_API_KEY="$HANGAR_MODEL_API_KEY"
elif [ "${HANGAR_LOCAL_MODEL:-1}" = 1 ]; then
  # No provider given: the demo project talks to the offline Gemma model served below.
  LOCAL_MODEL=1
  boot_args+=(--api-base "http://127.0.0.1:$MODEL_PORT/v1" --model gemma-3-270m)
  export HANGAR_MODEL_HEALTH_URL="http://127.0.0.1:$MODEL_PORT/v1/models"
fi
boot=$($PY manage.py bootstrap "${boot_args[@]}")
unset HANGAR_BOOTSTRAP_API_KEY
echo "$boot" > var/bootstrap.json

# Each process runs in a process group of its own (setsid), so stopping reaches its children too (the
# worker's pool, the model server under its installer); logs go through a prefixing filter.
groups=()
start() { # start NAME LOGFILE|- COMMAND...
  local name=$1 log=$2
  shift 2
  if [ "$log" = - ]; then
    setsid "$@" > >(sed -u "s/^/[$name] /") 2>&1 &
  else
    setsid "$@" >"$log" 2>&1 &
  fi
  groups+=($!)
}
stopping=0
stop() {
  [ $stopping = 1 ] && return
  stopping=1
  trap - INT TERM EXIT
  echo
  say "stopping ${#groups[@]} processes..."
  for pid in "${groups[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    alive=0
    for pid in "${groups[@]}"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.2
  done
  for pid in "${groups[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  say "stopped"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

# Offline local model when no provider endpoint is configured (deploy/local-model.sh; first run
# compiles llama-cpp-python, ~6 min on 2 cores). Its output goes to a log, not over the banner.
if [ $LOCAL_MODEL = 1 ]; then
  mkdir -p var/log
  start model var/log/model.log ./deploy/local-model.sh
fi
start web - ./deploy/run-web.sh -b 0.0.0.0 -p "$PORT"
start worker - ./deploy/run-worker.sh
start beat - "$PY" -m celery -A hangar beat --loglevel WARNING --schedule var/celerybeat-schedule

# Wait until each part answers, saying which and for how long (the model's first build takes minutes).
answers() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }
began=$(date +%s)
waiting_web=1
waiting_model=$LOCAL_MODEL
last_note=0
while [ $waiting_web = 1 ] || [ $waiting_model = 1 ]; do
  [ $waiting_web = 1 ] && answers "http://127.0.0.1:$PORT/api/health" && { waiting_web=0; say "web server answers on :$PORT"; }
  [ $waiting_model = 1 ] && answers "$HANGAR_MODEL_HEALTH_URL" && { waiting_model=0; say "model answers on :$MODEL_PORT"; }
  for pid in "${groups[@]}"; do
    kill -0 "$pid" 2>/dev/null || { say "a process exited during start-up (see its log above or var/log/model.log)"; exit 1; }
  done
  now=$(date +%s)
  if [ $((now - last_note)) -ge 10 ] && { [ $waiting_web = 1 ] || [ $waiting_model = 1 ]; }; then
    last_note=$now
    what=()
    [ $waiting_web = 1 ] && what+=("web server")
    if [ $waiting_model = 1 ]; then
      step=$(grep -v '^\s*$' var/log/model.log 2>/dev/null | tail -1 | cut -c1-80)
      what+=("model (${step:-starting}; log: var/log/model.log)")
    fi
    say "waiting $((now - began))s for: $(IFS=,; echo "${what[*]}")"
  fi
  sleep 1
done

$PY - "$boot" "$RESET" <<'PYEOF'
import json, sys
b, reset = json.loads(sys.argv[1]), sys.argv[2] == "1"
if b.get("password"):
    login = f"{b['email']} / {b['password']}   (shown once: note it now)"
else:
    login = f"{b['email']} / (set on the first run; ./deploy/up.sh --reset-password prints a new one)"
print(f"""
  ================================================================================
  Hangar is up:   {b['url']}/        (API docs: {b['url']}/api/docs/, admin: {b['url']}/admin/)
  Login:          {login}
  API token:      {b['token']}
  OpenCode URL:   {b.get('opencode_url')}
                  opencode run --attach {b.get('opencode_url')} -p {b['token']} "hello"
  Ctrl-C stops everything.
  ================================================================================
""", flush=True)
PYEOF
# Until one of them exits (or a signal arrives): then stop the rest.
wait -n "${groups[@]}" || true
say "a process exited; stopping the others"
