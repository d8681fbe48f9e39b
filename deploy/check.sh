#!/usr/bin/env bash
# The static gates, run before any test: lint (ruff), format (ruff format --check), types (mypy), import
# contracts (lint-imports, .importlinter), migrations (makemigrations --check). Any failure fails the
# whole check. Called by deploy/test.sh (and so by CI) and by the Makefile; `deploy/check.sh lint` (or
# types, imports, format, migrations) runs one gate.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=platform:.
# mypy's incremental cache outside the clone, shared by every clone on this machine: it keys each module
# by its content, so a new clone re-checks only what differs (its writes are atomic renames).
export MYPY_CACHE_DIR=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar/mypy}
bin=.venv/bin
failed=()

gate() {
  local name=$1; shift
  printf '\033[1;34m[check]\033[0m %s\n' "$name"
  "$@" || failed+=("$name")
}

run_gate() {
  case $1 in
    lint) gate "lint (ruff check)" "$bin/ruff" check --no-cache . ;;
    format) gate "format (ruff format --check)" "$bin/ruff" format --no-cache --check . ;;
    types)
      gate "types (mypy)" "$bin/mypy"
      # The in-container agent imports its siblings as top-level modules: typed from its own directory.
      gate "types (mypy, sandbox agent)" bash -c 'cd sandbox/agent && ../../.venv/bin/mypy --config-file ../../deploy/mypy-agent.ini *.py' ;;
    imports) gate "import contracts (lint-imports)" "$bin/lint-imports" --no-cache ;;
    # One leaf per app and no model change without its migration (two branches that each add an app's
    # next migration both land cleanly in git, and only `migrate` would notice).
    migrations) gate "migrations (makemigrations --check)" "$bin/python" manage.py makemigrations --check --dry-run ;;
    *) echo "unknown gate: $1 (lint, format, types, imports, migrations)" >&2; exit 2 ;;
  esac
}

if [ $# -eq 0 ]; then set -- lint format types imports migrations; fi
for name in "$@"; do run_gate "$name"; done

if [ ${#failed[@]} -gt 0 ]; then
  printf '\033[1;31m[check] failed: %s\033[0m\n' "$(IFS=,; echo "${failed[*]}")" >&2
  exit 1
fi
echo "[check] all gates passed"
