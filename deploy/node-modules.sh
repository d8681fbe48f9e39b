#!/usr/bin/env bash
# DIR's node_modules, as its committed package-lock.json says: deploy/node-modules.sh DIR ci|install.
# A clone's DIR/node_modules is a link to the one install this machine keeps per lock (and package.json)
# under ~/.cache/hangar/node (HANGAR_NODE_CACHE), made once under a lock, as setup.sh keeps .venv: a new
# clone of an unchanged tree installs nothing. A node_modules that is a directory of its own is kept and
# brought up to the lock in place. `ci` installs exactly the lock; `install` is for a lock npm cannot `ci`
# (tests/opencode_client: see deploy/test.sh), and keeps to it all the same.
set -euo pipefail
dir=$(cd "$1" && pwd)
how=$2
name=$(basename "$dir")
hash=$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -c1-16)
cache=${HANGAR_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar/node}
mkdir -p "$cache"
if [ -d "$dir/node_modules" ] && [ ! -L "$dir/node_modules" ]; then
  home=$dir
else
  home=$cache/$name-$hash
  mkdir -p "$home"
fi
(
  flock 9
  if [ "$(cat "$home/node_modules/.hangar-lock-hash" 2>/dev/null)" != "$hash" ]; then
    echo "[node] npm $how ($name, from package-lock.json)"
    [ "$home" = "$dir" ] || cp "$dir/package.json" "$dir/package-lock.json" "$home/"
    if [ "$how" = ci ]; then
      (cd "$home" && npm ci --no-audit --no-fund --loglevel=error)
    else
      (cd "$home" && npm install --no-audit --no-fund --loglevel=error)
    fi
    echo "$hash" > "$home/node_modules/.hangar-lock-hash"
  fi
) 9>"$cache/$name-$hash.lock"
[ "$home" = "$dir" ] || ln -sfn "$home/node_modules" "$dir/node_modules"
