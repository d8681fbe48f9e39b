#!/usr/bin/env bash
# Build the web app into frontend/dist: type-check against the committed API types (src/api/schema.d.ts,
# generated from Hangar's OpenAPI schema by `make schema`, never written by hand; a test fails when they
# drift from the schema), then bundle. Skipped when neither the sources, the lock file nor the schema changed
# (a hash stamp in dist/, as deploy/setup.sh does for Python deps).
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(cd .. && pwd)
mkdir -p "$ROOT/var/log"
"$ROOT/.venv/bin/python" "$ROOT/manage.py" spectacular --file "$ROOT/var/openapi.yaml" >"$ROOT/var/log/schema.log" 2>&1 \
  || { cat "$ROOT/var/log/schema.log"; exit 1; }
lock_hash=$(sha256sum package-lock.json | cut -c1-16)
if [ "$(cat node_modules/.lock-hash 2>/dev/null)" != "$lock_hash" ]; then
  echo "[frontend] npm ci (from package-lock.json)"
  # `npm ci` installs exactly the committed lock and never rewrites it. The lock carries every
  # platform's optional rollup build, so it stays in sync on any machine.
  npm ci --no-audit --no-fund --loglevel=error >"$ROOT/var/log/npm-frontend.log" 2>&1 \
    || { cat "$ROOT/var/log/npm-frontend.log"; exit 1; }
  echo "$lock_hash" > node_modules/.lock-hash
fi
src_hash=$(cat package-lock.json vite.config.ts tsconfig.json index.html "$ROOT/var/openapi.yaml" \
  $(find src -type f | sort) | sha256sum | cut -c1-16)
if [ "$(cat dist/.src-hash 2>/dev/null)" = "$src_hash" ]; then
  exit 0
fi
echo "[frontend] building the web app"
npx tsc --noEmit
npx vite build --logLevel warn
echo "$src_hash" > dist/.src-hash
