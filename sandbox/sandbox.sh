#!/usr/bin/env bash
# Lifecycle of the sandbox cluster, inside a network namespace of its own.
# Usage: sandbox/sandbox.sh up [STACK [STACK_FILE]]|down|status|shell|exec CMD...|logs|restart COMPONENT
# `up` shapes the fake cluster like a stack (default local: Pulumi.local.yaml, or STACK_FILE)
# and refuses to reuse a running sandbox that another stack (or stack file) shaped.
# GPUQ_TOPOLOGY=multikueue starts a MultiKueue manager and two workers instead, each a control
# plane of its own shaped by its own stack (sandbox/topology.py); STACK does not apply there.
# Every process of the sandbox, and every command that talks to it, runs inside the
# namespace; only loopback and the namespace-local pod range exist there.
# GPUQ_SANDBOX=NAME selects another sandbox of this checkout, with its state in
# .sandbox/instances/NAME and a namespace of its own (sandbox/paths.py): make test's suites
# run side by side that way. Unset: the checkout's one sandbox, in .sandbox.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
instance=${GPUQ_SANDBOX:-}
if [ -z "$instance" ]; then
  state=$root/.sandbox
  ns=gpuq-$(printf '%s' "$root" | sha256sum | cut -c1-10)
elif [[ $instance =~ ^[a-z0-9][a-z0-9-]{0,30}$ ]]; then
  state=$root/.sandbox/instances/$instance
  ns=gpuq-$(printf '%s#%s' "$root" "$instance" | sha256sum | cut -c1-10)
else
  echo "sandbox: GPUQ_SANDBOX=$instance: a sandbox instance is named by lowercase letters," \
    "digits and '-' (at most 31)" >&2
  exit 2
fi
py=$root/.venv/bin/python
export PATH="$root/.toolchain/bin:$root/.venv/bin:$PATH"

# kubectl's discovery cache is the sandbox's own: the default, ~/.kube/cache, is keyed by the
# API server's address, which every sandbox on the machine shares (127.0.0.1:6443), so it
# would hand one cluster's resource list to another (a CRD one has and another has not yet).
in_ns() { KUBECACHEDIR=$state/kube-cache ip netns exec "$ns" "$@"; }
ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$ns"; }

up() {
  local topology=${GPUQ_TOPOLOGY:-single} stack=${1:-} file=${2:-} running
  if [ -n "$file" ]; then file=$(realpath -- "$file"); fi # relative to the caller, not $root
  cd "$root"
  if [ "$topology" != single ]; then
    if [ -n "$stack" ]; then
      echo "sandbox: the $topology topology's clusters are shaped by its own stacks" \
        "(sandbox/topology.py); STACK does not apply" >&2
      return 2
    fi
    # Its primary cluster's stack: what the shape record and the reuse check go by.
    { read -r stack; read -r file; } < <("$py" -m sandbox.topology primary "$topology") || return 2
  fi
  stack=${stack:-local}
  if ns_exists && in_ns "$py" -m sandbox.cluster status >/dev/null 2>&1; then
    running=$(in_ns "$py" -m sandbox.cluster topology)
    if [ "$running" != "$topology" ]; then
      echo "sandbox: already up with topology $running, not $topology; run sandbox down first" >&2
      return 1
    fi
    "$py" -m sandbox.shape same "$stack" ${file:+"$file"} || return 1
    echo "sandbox: already up (namespace $ns, topology $topology, shaped like stack $stack)"
    return 0
  fi
  # A stack that cannot shape a sandbox is refused before anything starts (every cluster's
  # stack, in another topology: cluster.py says how each is shaped once it is up).
  if [ "$topology" = single ]; then
    "$py" -m sandbox.shape check "$stack" ${file:+"$file"}
  else
    "$py" -m sandbox.topology check "$topology"
  fi
  down >/dev/null 2>&1 || true # leftovers of a crashed run
  mkdir -p "$state"
  ip netns add "$ns"
  echo "$ns" > "$state/netns"
  in_ns ip link set lo up
  # The pod range lives on lo: a fake pod's IP answers inside the namespace, nowhere else.
  in_ns ip addr add 10.244.0.0/16 dev lo
  local args=()
  if [ "$topology" = single ]; then args=("$stack" ${file:+"$file"}); fi
  # Its errors are kept too, and said again after the logs: a reader of the output's end (a
  # test's failure message) sees why the start failed, not only what the components said.
  local errors=$state/up.errors
  if ! GPUQ_TOPOLOGY=$topology in_ns "$py" -m sandbox.cluster up "${args[@]}" \
    2> >(tee "$errors" >&2); then
    echo "sandbox: start failed; logs follow" >&2
    in_ns "$py" -m sandbox.cluster logs >&2 || true
    # Nothing half-started is left behind (processes, namespace); the logs stay in
    # .sandbox/logs for a look afterwards.
    down >&2 || true
    echo "sandbox: start failed; its last errors:" >&2
    tail -n 15 "$errors" >&2 || true
    return 1
  fi
  rm -f "$errors"
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
  up) shift; up "$@" ;;
  down) down ;;
  status) cd "$root"; ns_exists && in_ns "$py" -m sandbox.cluster status ;;
  logs) cd "$root"; in_ns "$py" -m sandbox.cluster logs ;;
  restart) shift; cd "$root"; in_ns "$py" -m sandbox.cluster restart "$@" ;;
  shell) cd "$root"; echo "sandbox shell: KUBECONFIG=$state/kubeconfig; exit to leave"; KUBECONFIG=$state/kubeconfig in_ns bash -i ;;
  exec) shift; cd "$root"; KUBECONFIG=$state/kubeconfig in_ns "$@" ;;
  name) echo "$ns" ;;
  *) echo "usage: $0 up [STACK [STACK_FILE]]|down|status|logs|shell|exec CMD...|restart COMPONENT" >&2; exit 2 ;;
esac
