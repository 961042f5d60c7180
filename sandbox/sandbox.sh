#!/usr/bin/env bash
# Lifecycle of the sandbox cluster, inside a network namespace of its own.
# Usage: sandbox/sandbox.sh up|down|status|shell|exec CMD...|logs|restart COMPONENT
# Every process of the sandbox, and every command that talks to it, runs inside the
# namespace; only loopback and the namespace-local pod range exist there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
state=$root/.sandbox
ns=gpuq-$(printf '%s' "$root" | sha256sum | cut -c1-10)
py=$root/.venv/bin/python
export PATH="$root/.toolchain/bin:$root/.venv/bin:$PATH"

in_ns() { ip netns exec "$ns" "$@"; }
ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns"; }

up() {
  if ns_exists && in_ns "$py" -m sandbox.cluster status >/dev/null 2>&1; then
    echo "sandbox: already up (namespace $ns)"; return 0
  fi
  down >/dev/null 2>&1 || true # leftovers of a crashed run
  mkdir -p "$state"
  ip netns add "$ns"
  echo "$ns" > "$state/netns"
  in_ns ip link set lo up
  # The pod range lives on lo: a fake pod's IP answers inside the namespace, nowhere else.
  in_ns ip addr add 10.244.0.0/16 dev lo
  cd "$root"
  if ! in_ns "$py" -m sandbox.cluster up; then
    echo "sandbox: start failed; logs follow" >&2
    in_ns "$py" -m sandbox.cluster logs >&2 || true
    return 1
  fi
}

down() {
  cd "$root"
  if ns_exists; then
    in_ns "$py" -m sandbox.cluster down || true
    # Anything still in the namespace belongs to the sandbox: stop it by namespace membership.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.2; done
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break; sleep 0.2; done
    ip netns del "$ns"
  fi
  # Again, with every process gone: what a late writer recreated, or the leftovers of a down
  # that failed part-way (no namespace then), are removed all the same.
  "$py" -m sandbox.cluster down || true
  rm -f "$state/netns"
  echo "sandbox: down"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) cd "$root"; ns_exists && in_ns "$py" -m sandbox.cluster status ;;
  logs) cd "$root"; in_ns "$py" -m sandbox.cluster logs ;;
  restart) shift; cd "$root"; in_ns "$py" -m sandbox.cluster restart "$@" ;;
  shell) cd "$root"; echo "sandbox shell: KUBECONFIG=$state/kubeconfig; exit to leave"; KUBECONFIG=$state/kubeconfig in_ns bash -i ;;
  exec) shift; cd "$root"; KUBECONFIG=$state/kubeconfig in_ns "$@" ;;
  name) echo "$ns" ;;
  *) echo "usage: $0 up|down|status|logs|shell|exec CMD...|restart COMPONENT" >&2; exit 2 ;;
esac
