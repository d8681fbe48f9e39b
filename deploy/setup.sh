#!/usr/bin/env bash
# Idempotent machine set-up shared by up.sh and test.sh: everything a fresh machine lacks is
# installed or started here (Python deps, host packages, Docker engine, Postgres, Redis, the sandbox
# image, the database schema). Safe to run again: each step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
mkdir -p var/log
say() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }
die() { printf '\033[1;31m[setup] %s\033[0m\n' "$*" >&2; exit 1; }

apt_updated=0
apt_install() {
  [ "$(id -u)" = 0 ] || die "need root to install: $* (run: sudo apt-get install -y $*)"
  if [ $apt_updated = 0 ]; then apt-get update -q >var/log/apt.log 2>&1 || true; apt_updated=1; fi
  say "installing host packages: $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>var/log/apt.log 2>&1 \
    || die "apt-get install $* failed (see var/log/apt.log)"
}

# --- host packages -------------------------------------------------------------------------------
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v rg >/dev/null || need+=(ripgrep)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v git >/dev/null || need+=(git)
command -v npm >/dev/null || need+=(nodejs npm)
# Debian's Chromium: the browser tests drive it through Playwright (no browser download).
[ -x /usr/bin/chromium ] || [ "${HANGAR_NO_CHROMIUM:-0}" = 1 ] || need+=(chromium)
command -v ssh-keyscan >/dev/null || need+=(openssh-client)  # SSH repositories: deploy and host keys
command -v tmux >/dev/null || need+=(tmux)  # the OpenCode TUI test drives `opencode attach` in tmux
# Host B of the two-host tests (deploy/hosts/hostb.sh): a network namespace, a veth link, its iptables.
command -v ip >/dev/null || need+=(iproute2)
command -v iptables >/dev/null || need+=(iptables)
command -v nsenter >/dev/null || need+=(util-linux)
command -v zstd >/dev/null || need+=(zstd)  # workspace exports (sandbox/workspace_archive.py)
# `docker-compose config` checks deploy/compose.yaml offline (tests/deploy/test_compose.py).
command -v docker-compose >/dev/null || need+=(docker-compose)
[ ${#need[@]} -eq 0 ] || apt_install "${need[@]}"
# The tests' SSH git server. Its package would start a system sshd on port 22: policy-rc.d says no.
if [ ! -x /usr/sbin/sshd ] && [ "$(id -u)" = 0 ]; then
  made_policy=0
  [ -e /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; made_policy=1; }
  chmod +x /usr/sbin/policy-rc.d
  apt_install openssh-server
  [ $made_policy = 0 ] || rm -f /usr/sbin/policy-rc.d
fi

# --- Python deps (pinned in pyproject.toml) ------------------------------------------------------
# A clone's .venv is a link to the one environment this machine keeps per set of pinned requirements
# (and Python version), under ~/.cache/hangar/venvs: a new clone of an unchanged tree installs nothing,
# and a change to the pins makes a new one beside it, as Poetry keeps its environments. A .venv that is
# a directory of its own is kept and brought up to the pins in place.
PY=${PYTHON:-python3}
requirements=$($PY - <<'PYEOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
print("\n".join(project["dependencies"] + project["optional-dependencies"]["dev"]))
PYEOF
)
deps_hash=$( { $PY --version; echo "$requirements"; } | sha256sum | cut -c1-16)
venvs=${HANGAR_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar/venvs}
mkdir -p "$venvs"
if [ ! -e .venv ] || [ -L .venv ]; then ln -sfn "$venvs/$deps_hash" .venv; fi
venv=$(readlink -f .venv)
(
  flock 9  # two clones setting up at once build one environment, once
  [ -x "$venv/bin/python" ] || { say "creating .venv ($venv)"; $PY -m venv "$venv"; }
  if [ "$(cat "$venv/.deps-hash" 2>/dev/null)" != "$deps_hash" ]; then
    say "installing Python dependencies (pyproject.toml)"
    echo "$requirements" > var/requirements.txt
    "$venv/bin/pip" install -q --upgrade pip >var/log/pip.log 2>&1
    "$venv/bin/pip" install -q -r var/requirements.txt >>var/log/pip.log 2>&1 || die "pip install failed (see var/log/pip.log)"
    echo "$deps_hash" > "$venv/.deps-hash"
  fi
) 9>"$venvs/$deps_hash.lock"

# --- secrets: generated once, never committed ----------------------------------------------------
if [ ! -f .env ]; then
  say "writing .env with fresh keys"
  # Created unreadable to others from the first byte (a chmod afterwards leaves a window).
  ( umask 077; {
    echo "DJANGO_SECRET_KEY=$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(48))')"
    echo "HANGAR_TOKEN_PEPPERS=$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(32))')"
    echo "HANGAR_ENCRYPTION_KEYS=$(.venv/bin/python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
  } > .env )
  chmod 600 .env
fi

# --- Postgres --------------------------------------------------------------------------------------
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if [ -d /etc/postgresql ] && command -v pg_ctlcluster >/dev/null; then
    say "starting Postgres"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start \
      || die "could not start Postgres"
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 && break; sleep 0.5; done
  else
    die "Postgres is not installed: apt-get install postgresql, or set DATABASE_URL to a reachable server"
  fi
fi
# Create the configured database when it lives on this machine's Postgres (default: hangar).
read -r db_host db_name < <(.venv/bin/python - <<'PYEOF'
import os, dj_database_url
c = dj_database_url.parse(os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hangar"))
print(c.get("HOST") or "127.0.0.1", c["NAME"])
PYEOF
)
case "$db_host" in
  127.0.0.1|localhost|/*)
    exists=$(psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$db_name'" 2>/dev/null || true)
    [ "$exists" = 1 ] || { say "creating database $db_name"; createdb -h 127.0.0.1 -U postgres "$db_name"; } ;;
esac

# --- Redis -----------------------------------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  command -v redis-server >/dev/null || die "Redis is not installed: apt-get install redis-server"
  say "starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no
  for _ in $(seq 20); do redis-cli ping >/dev/null 2>&1 && break; sleep 0.25; done
fi

# --- Docker engine ---------------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd"
  nohup dockerd >var/log/dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || die "dockerd did not start (see var/log/dockerd.log)"
fi

# --- sandbox image (offline: debootstrap + docker import; a no-op when the recipe is unchanged) -----
say "sandbox image: $(.venv/bin/python -m sandbox.image build)"

# --- schema ----------------------------------------------------------------------------------------
.venv/bin/python manage.py migrate --noinput -v0
# --- web app (frontend/build.sh skips the build when nothing changed) ----------------------------
./frontend/build.sh
.venv/bin/python manage.py collectstatic --noinput -v0  # served by WhiteNoise from Daphne
say "ready"
