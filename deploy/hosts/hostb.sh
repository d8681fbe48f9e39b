#!/usr/bin/env bash
# A second sandbox host on this machine, for tests and benches: a real dockerd inside a network namespace
# of its own, joined to this one by a private veth link (docs/scale-out.md, "Two hosts on one machine").
#
#   deploy/hosts/hostb.sh up      start it (idempotent: a running host B is left as it is)
#   deploy/hosts/hostb.sh down    stop it and remove the namespace and the link (its data root is kept)
#   deploy/hosts/hostb.sh status  exit 0 if it answers
#   deploy/hosts/hostb.sh env     the variables a process needs to act as B's host service
#
# What B has of its own: network namespace `hangar-hostb` (own interfaces, routes and iptables), data root
# /var/lib/hangar-hostb/docker (kept across runs: the sandbox image is loaded once), exec root, socket
# /run/hangar-hostb/docker.sock, pidfile, bridge (10.214.0.1/24) and address pool (10.215.0.0/16). The
# private network is the veth pair hb0 (this namespace, 10.212.0.1/30) - hb1 (B's, 10.212.0.2/30); the
# agents' channel networks B makes are 10.213.<n>.0/24 (HANGAR_AGENT_SUBNET), routed here via 10.212.0.2.
# Forwarded traffic to or from hb0 is dropped in this namespace: only this machine's own processes (the
# engine), never its containers, use the private link. Sandbox roots are the caller's (HANGAR_SANDBOX_ROOT).
set -euo pipefail
cd "$(dirname "$0")/../.."
NS=hangar-hostb
DATA=/var/lib/hangar-hostb
RUN=/run/$NS
SOCK=$RUN/docker.sock
PRIV_A=10.212.0.1 PRIV_B=10.212.0.2 CHANNEL_NETS=10.213.0.0/16
say() { printf '\033[1;34m[hostb]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[hostb] %s\033[0m\n' "$*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces, dockerd)"
inb() { nsenter --net="/run/netns/$NS" "$@"; }
dockerb() { docker -H "unix://$SOCK" "$@"; }
answers() { [ -S "$SOCK" ] && dockerb info >/dev/null 2>&1; }

link_up() {
  [ -e "/run/netns/$NS" ] || ip netns add "$NS"
  inb ip link set lo up
  if ! ip link show hb0 >/dev/null 2>&1; then
    ip link add hb0 type veth peer name hb1
    ip link set hb1 netns "$NS"
  fi
  ip addr replace "$PRIV_A/30" dev hb0
  ip link set hb0 up
  inb ip addr replace "$PRIV_B/30" dev hb1
  inb ip link set hb1 up
  ip route replace "$CHANNEL_NETS" via "$PRIV_B" dev hb0
  for dir in -o -i; do  # this namespace forwards nothing over the private link (its containers stay off it)
    iptables -C FORWARD "$dir" hb0 -j DROP 2>/dev/null || iptables -I FORWARD "$dir" hb0 -j DROP
  done
}

engine_up() {
  answers && return 0
  mkdir -p "$DATA/docker" "$RUN"
  if [ -f "$RUN/docker.pid" ] && kill -0 "$(cat "$RUN/docker.pid")" 2>/dev/null; then
    say "dockerd $(cat "$RUN/docker.pid") is starting"
  else
    rm -f "$RUN/docker.pid" "$SOCK"
    say "starting dockerd in $NS"
    # Same mount namespace (the host service's loop mounts are seen by B's containers), own network.
    setsid nsenter --net="/run/netns/$NS" dockerd \
      --data-root "$DATA/docker" --exec-root "$RUN/exec" --host "unix://$SOCK" --pidfile "$RUN/docker.pid" \
      --bip 10.214.0.1/24 --default-address-pool base=10.215.0.0/16,size=24 \
      --cgroup-parent hangar-hostb --containerd-namespace hangar-hostb \
      --containerd-plugins-namespace hangar-hostb-plugins \
      >>"$DATA/dockerd.log" 2>&1 </dev/null 9>&- &
  fi
  for _ in $(seq 120); do answers && return 0; sleep 0.5; done
  die "dockerd of $NS did not answer (see $DATA/dockerd.log)"
}

image_up() {
  local tag
  tag=$(.venv/bin/python -m sandbox.image build | tail -1)  # host A's image, built if missing
  if [ "$(dockerb image inspect -f '{{.Id}}' "$tag" 2>/dev/null)" != "$(docker image inspect -f '{{.Id}}' "$tag")" ]; then
    say "loading $tag into $NS (docker save | docker load)"
    docker save "$tag" | dockerb load -q >/dev/null
  fi
}

case "${1:-}" in
  up)
    exec 9>"/run/lock/$NS.lock"; flock 9  # parallel test processes share one host B
    link_up; engine_up; image_up ;;
  down)
    exec 9>"/run/lock/$NS.lock"; flock 9
    if [ -f "$RUN/docker.pid" ]; then
      pid=$(cat "$RUN/docker.pid")
      if kill -0 "$pid" 2>/dev/null; then
        # B's containers go with it (their loop mounts are the sandbox roots' to clean).
        dockerb ps -q | xargs -r docker -H "unix://$SOCK" rm -f >/dev/null || true
        kill "$pid"
        for _ in $(seq 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
      fi
      rm -f "$RUN/docker.pid"
    fi
    for dir in -o -i; do iptables -D FORWARD "$dir" hb0 -j DROP 2>/dev/null || true; done
    ip route del "$CHANNEL_NETS" 2>/dev/null || true
    ip link del hb0 2>/dev/null || true
    [ -e "/run/netns/$NS" ] && ip netns del "$NS"
    say "down (data root $DATA kept)" ;;
  status) answers ;;
  env)
    echo "DOCKER_HOST=unix://$SOCK"
    echo "HANGAR_SANDBOX_NETNS=$NS"
    echo "HANGAR_AGENT_PRIVATE_IFACE=hb1" ;;
  *) die "usage: $0 up|down|status|env" ;;
esac
