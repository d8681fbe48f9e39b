#!/usr/bin/env bash
# Run the whole test suite against the real Postgres, Redis and Docker engine, after the same set-up
# a fresh machine needs. Extra arguments go to pytest (e.g. deploy/test.sh tests/sandbox -x).
set -euo pipefail
cd "$(dirname "$0")/.."
./deploy/setup.sh
# Static gates first (lint, format, types, import contracts): a failure stops the run before any test.
# HANGAR_CHECK=0 skips them, for quick re-runs of a test subset while working; CI never sets it.
if [ "${HANGAR_CHECK:-1}" != 0 ]; then ./deploy/check.sh; fi

# Node packages for the OpenCode-client compatibility tests (stock `opencode` CLI and JS SDK).
# `npm install`, not `npm ci`: opencode-ai names its per-platform binaries as optional dependencies
# without versions, which npm 11 leaves out of any lock it writes and `npm ci` then calls out of sync.
# install keeps to the committed lock all the same and does not rewrite it (deploy/node-modules.sh).
if [ -f tests/opencode_client/package.json ]; then
  ./deploy/node-modules.sh tests/opencode_client install >var/log/npm.log 2>&1 || { cat var/log/npm.log; exit 1; }
fi

# The whole suite runs in parallel test processes (pytest-xdist), each with its own test database, Redis
# database and sandbox root (tests/envdefaults.py); a module's tests stay in one process, since they share
# module-scoped workers and servers. Most tests wait on Docker, Postgres or a worker rather than the CPU,
# so more processes than cores pays. HANGAR_TEST_WORKERS=0 runs them in this one process. A run of a
# subset (arguments given) stays in one process unless it asks for -n itself.
workers=()
if [ $# -eq 0 ] && [ "${HANGAR_TEST_WORKERS:-4}" != 0 ]; then
  # The slowest tests, printed after a full run: where the suite's time goes (issue 26's 15 minutes).
  # Files go out longest first (tests/schedule.py orders them from tests/durations.json; xdist would
  # otherwise order them by their number of tests), so no long one starts last and runs alone.
  workers=(-n "${HANGAR_TEST_WORKERS:-4}" --dist loadfile --no-loadscope-reorder --durations=30)
fi
set +e
.venv/bin/python -m pytest "${workers[@]}" "$@"
code=$?
set -e
if [ $code -eq 5 ]; then echo "[test] pytest collected no tests"; exit 1; fi
exit $code
