#!/usr/bin/env bash
# Bring the whole platform up on this machine and run it in the foreground:
# set-up (deps, Postgres, Redis, Docker, sandbox image, web app, schema), a demo org/user/project on first
# run, then Daphne (web + WebSockets), a Celery worker, Celery beat and (without a provider) the bundled
# model. The banner (URL, login, token) comes as soon as the web server answers; the bundled model's first
# build goes on behind it, shown on one status line (and in the web app, and to a prompt sent before it is
# ready). Each process logs to var/log/<name>.log; an error is shown once, with its log. Ctrl-C or a TERM
# stops every process it started and hibernates the sandboxes they started (workspaces are kept).
#
#   ./deploy/up.sh                    run (the demo password is printed on the first run only)
#   ./deploy/up.sh --reset-password   give the demo user a new password, printed in the banner
#   PORT=8001 ./deploy/up.sh          another port (HANGAR_LOCAL_MODEL_PORT for the model's, 8081)
set -euo pipefail
cd "$(dirname "$0")/.."
# up's own files are private (var/bootstrap.json holds a token, and on a first run the password); the
# services run with the caller's umask (under 077 the sandbox uid could not read what the worker made).
caller_umask=$(umask)
umask 077
RESET=0
for arg in "$@"; do
  case $arg in
    --reset-password) RESET=1 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown option: $arg" >&2; exit 2 ;;
  esac
done
TTY=0
[ -t 1 ] && TTY=1
status_shown=""
status_key=""
status_time=0
# One status line: rewritten in place on a terminal; elsewhere (a log, CI) printed when it says something
# new (its figures aside) or once a minute.
status() {
  if [ $TTY = 1 ]; then printf '\r\033[K\033[2m[up] %s\033[0m' "$*"; status_shown=1; return; fi
  local key now
  key=$(printf '%s' "$*" | tr -d '0-9')
  now=$(date +%s)
  if [ "$key" != "$status_key" ] || [ $((now - status_time)) -ge 60 ]; then
    printf '[up] %s\n' "$*"
    status_key=$key
    status_time=$now
  fi
}
say() {
  if [ $TTY = 1 ] && [ -n "$status_shown" ]; then printf '\r\033[K'; status_shown=""; fi
  printf '\033[1;34m[up]\033[0m %s\n' "$*"
}
warn() {
  if [ $TTY = 1 ] && [ -n "$status_shown" ]; then printf '\r\033[K'; status_shown=""; fi
  printf '\033[1;31m[up] %s\033[0m\n' "$*"
}
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
mkdir -p var/log

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
  export HANGAR_LOCAL_MODEL_STATUS="$PWD/var/local-model.json" HANGAR_LOCAL_MODEL_LOG=var/log/model.log
  rm -f "$HANGAR_LOCAL_MODEL_STATUS"  # a report of an earlier run says nothing of this one
fi
boot=$($PY manage.py bootstrap "${boot_args[@]}" 2>var/log/bootstrap.log) \
  || { warn "bootstrap failed: see var/log/bootstrap.log"; tail -5 var/log/bootstrap.log >&2; exit 1; }
unset HANGAR_BOOTSTRAP_API_KEY
echo "$boot" > var/bootstrap.json

# Each process runs in a process group of its own (setsid), so stopping reaches its children too (the
# worker's pool, the model server under its installer), with the caller's umask, logging to its own file
# (the previous run's is kept as .1).
names=()
groups=()
start() { # start NAME COMMAND...
  local name=$1 log=var/log/$1.log
  shift
  [ -f "$log" ] && mv -f "$log" "$log.1"
  ( umask "$caller_umask"; exec setsid "$@" ) >"$log" 2>&1 &
  names+=("$name")
  groups+=($!)
}
stopping=0
stop() {
  [ $stopping = 1 ] && return
  stopping=1
  trap - INT TERM EXIT
  [ $TTY = 1 ] && echo
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
  [ $LOCAL_MODEL = 1 ] && rm -f "$HANGAR_LOCAL_MODEL_STATUS"
  # The sandboxes the worker started: stopped (hibernated), their workspaces kept for the next run.
  if [ "${HANGAR_UP_KEEP_SANDBOXES:-0}" = 1 ]; then
    say "sandboxes left running (HANGAR_UP_KEEP_SANDBOXES=1)"
  else
    stopped=$($PY manage.py sandboxes_hibernate 2>>var/log/bootstrap.log) || stopped="(could not stop the sandboxes: see var/log/bootstrap.log)"
    say "sandboxes: $stopped"
  fi
  say "stopped"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

# Offline local model when no provider endpoint is configured (deploy/local-model.sh; its first run
# compiles llama.cpp for minutes, behind the banner).
[ $LOCAL_MODEL = 1 ] && start model ./deploy/local-model.sh
start web ./deploy/run-web.sh -b 0.0.0.0 -p "$PORT"
start worker ./deploy/run-worker.sh
start beat "$PY" -m celery -A hangar beat --loglevel WARNING --schedule var/celerybeat-schedule

answers() { curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null; }
began=$(date +%s)
elapsed() { local s=$(($(date +%s) - $1)); [ $s -ge 60 ] && echo "$((s / 60)) min $((s % 60)) s" || echo "$s s"; }
# A process that exits: the model's failure is said once and the rest goes on (prompts get a clear error);
# any other stops everything. Either way, with the end of its log.
exited() { # exited NAME
  local log=var/log/$1.log
  if [ "$1" = model ]; then
    warn "the local model stopped: see $log (last lines below); the rest keeps running"
  else
    warn "$1 exited: see $log (last lines below); stopping the others"
  fi
  tail -n 8 "$log" 2>/dev/null | sed 's/^/    /' >&2 || true
}
# Errors a running process logs: said once, with where to read them (the lines stay in the log); more
# of them are summed up at most once a minute, so they never bury the banner.
declare -A errors_seen=() errors_said=()
ERROR_LINE='^(Traceback|.*\b(ERROR|CRITICAL)\b)'
new_errors() {
  local name log count last now
  now=$(date +%s)
  for name in web worker beat; do
    log=var/log/$name.log
    count=$(grep -cE "$ERROR_LINE" "$log" 2>/dev/null || true)
    count=${count:-0}
    [ "$count" -gt "${errors_seen[$name]:-0}" ] || continue
    [ $((now - ${errors_said[$name]:-0})) -ge 60 ] || continue
    # The line that names the error (a traceback's first line does not).
    last=$(grep -E "$ERROR_LINE|^[A-Za-z_.]*(Error|Exception)\b|raised unexpected" "$log" 2>/dev/null \
      | grep -v '^Traceback' | tail -n 1 | cut -c1-140 || true)
    warn "$name logged $((count - ${errors_seen[$name]:-0})) error(s), the last: $last (see $log)"
    errors_seen[$name]=$count
    errors_said[$name]=$now
  done
}
model_line() {
  local line
  line=$(python3 deploy/model_progress.py show "$HANGAR_LOCAL_MODEL_STATUS" 2>/dev/null || true)
  echo "local model: ${line:-starting} (log: var/log/model.log)"
}
# Watch until the web server answers (then the banner), and afterwards until a signal or an exit.
waiting_web=1
waiting_model=$LOCAL_MODEL
banner_at=0
while :; do
  for i in "${!names[@]}"; do
    name=${names[$i]}
    [ -n "$name" ] || continue
    if ! kill -0 "${groups[$i]}" 2>/dev/null; then
      exited "$name"
      names[$i]=""
      if [ "$name" = model ]; then waiting_model=0; else exit 1; fi
    fi
  done
  if [ $waiting_web = 1 ] && answers "http://127.0.0.1:$PORT/api/health"; then
    waiting_web=0
    banner_at=$(date +%s)
    say "web server answers on :$PORT after $(elapsed "$began")"
    $PY - "$boot" "$RESET" "$LOCAL_MODEL" <<'PYEOF'
import json, sys
b, reset, local = json.loads(sys.argv[1]), sys.argv[2] == "1", sys.argv[3] == "1"
if b.get("password"):
    login = f"{b['email']} / {b['password']}   (shown once: note it now)"
else:
    login = f"{b['email']} / (set on the first run; ./deploy/up.sh --reset-password prints a new one)"
model = "\n  Model:          the bundled local model is still starting: see the line below" if local else ""
print(f"""
  ================================================================================
  Hangar is up:   {b['url']}/        (API docs: {b['url']}/api/docs/, admin: {b['url']}/admin/)
  Login:          {login}
  API token:      {b['token']}
  OpenCode URL:   {b.get('opencode_url')}
                  opencode run --attach {b.get('opencode_url')} -p {b['token']} "hello"{model}
  Logs:           var/log/ (web, worker, beat{", model" if local else ""}). Ctrl-C stops everything.
  ================================================================================
""", flush=True)
PYEOF
  fi
  if [ $waiting_model = 1 ] && answers "$HANGAR_MODEL_HEALTH_URL"; then
    waiting_model=0
    say "local model ready on :$MODEL_PORT after $(elapsed "$began")"
  fi
  [ $waiting_web = 1 ] || new_errors
  if [ $waiting_web = 1 ]; then
    what="starting: web server ($(elapsed "$began"))"
    [ $waiting_model = 1 ] && what="$what; $(model_line)"
    status "$what"
  elif [ $waiting_model = 1 ]; then
    status "$(model_line)"
  elif [ -n "$status_shown" ] && [ $TTY = 1 ]; then
    printf '\r\033[K'; status_shown=""
  fi
  sleep 1
done
