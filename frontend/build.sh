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
# node_modules as the committed lock says (`npm ci`, never rewriting it; the lock carries every
# platform's optional rollup build, so it stays in sync on any machine), a link to the machine's install.
"$ROOT/deploy/node-modules.sh" . ci >"$ROOT/var/log/npm-frontend.log" 2>&1 \
  || { cat "$ROOT/var/log/npm-frontend.log"; exit 1; }
src_hash=$(cat build.sh package-lock.json vite.config.ts tsconfig.json index.html "$ROOT/var/openapi.yaml" \
  $(find src -type f | sort) | sha256sum | cut -c1-16)
if [ "$(cat dist/.src-hash 2>/dev/null)" = "$src_hash" ]; then
  exit 0
fi
# The machine keeps each build by the hash of everything it is built from (as node_modules and .venv):
# a new clone of an unchanged web app copies it instead of type-checking and bundling again.
builds=${HANGAR_WEB_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar/web}
if [ -f "$builds/$src_hash/.src-hash" ]; then
  rm -rf dist && cp -a "$builds/$src_hash" dist
  exit 0
fi
echo "[frontend] building the web app"
npx tsc --noEmit
npx vite build --logLevel warn
# Compressed copies beside the bundle: WhiteNoise sends a browser that accepts gzip the .gz (it finds the
# files in dist/ itself, before collectstatic), a third of the main bundle's size.
find dist/assets -type f \( -name '*.js' -o -name '*.css' -o -name '*.svg' \) -exec gzip -k -9 {} +
echo "$src_hash" > dist/.src-hash
mkdir -p "$builds" && rm -rf "$builds/$src_hash.$$" && cp -a dist "$builds/$src_hash.$$" \
  && mv -T "$builds/$src_hash.$$" "$builds/$src_hash" 2>/dev/null || rm -rf "$builds/$src_hash.$$"
