"""The sandbox's clusters: start, wait ready, stop, status, logs (`python -m sandbox.cluster`).

Runs inside the sandbox's network namespace (sandbox/sandbox.sh puts it there). For each
cluster of the topology (sandbox/topology.py: one cluster, or a MultiKueue manager and two
workers) it makes the certificates (sandbox/pki.py), starts the control plane
(sandbox/control_plane.py: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
kwok for fake nodes and pods), gives it the simulated cloud's nodes shaped like its stack
(sandbox/shape.py) and starts the Kueue pod runner, each cluster on its own loopback address.
The processes are recorded with their start times (sandbox/procs.py, so a reused pid is never
killed) in .sandbox/state.json, each one's log in .sandbox/logs/.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from gpu_queues.config.model import StackConfig
from gpu_queues.release.module import render_release, rendered_path
from gpu_queues.whatif.nodes import FLAVOR_ANNOTATION
from sandbox import jobset, kuberay, lws, mpi_operator, topology, trainer, training_operator
from sandbox import shape as fake_cluster
from sandbox.control_plane import https_ok, kubectl, start_control_plane
from sandbox.paths import KUBECONFIG, KUBECTL, LOGS, ROOT, STATE
from sandbox.pki import make_pki
from sandbox.procs import (
    STATE_FILE,
    alive,
    load_state,
    log_path,
    run_checked,
    save_state,
    signal_group,
    spawn,
    stop,
    wait_for,
)
from sandbox.topology import Cluster

PKI = topology.single()[0].pki


def restart(name: str, grace: float = 10.0) -> float:
    """Stop one component and start it again with its recorded command, keeping every piece
    of its data (etcd's, for the API server). Waits until it is ready again (the API server's
    /readyz); returns how long it was down, in seconds."""
    state = load_state()
    entry = state["processes"][name]
    started = time.monotonic()
    stop(entry, grace)
    spawn(name, entry["argv"], entry.get("env"))
    for c in topology.clusters(state.get("topology")):
        if name == c.process("kube-apiserver"):
            wait_for(f"{name} /readyz", partial(https_ok, f"{c.apiserver}/readyz", c))
    return time.monotonic() - started


def render_kueue_manifest(version: str) -> None:
    """The release manifest, rendered offline by the one render the stacks' pin comes from
    (gpu_queues.release.module: the Kueue module's config/ with the pinned kubectl)."""
    render_release(version, ROOT, KUBECTL, offline=True)


def ensure_pod_range(c: Cluster) -> None:
    """The cluster's pod range on lo: a fake pod's IP answers inside the namespace only."""
    shown = run_checked("ip", "-o", "addr", "show", "dev", "lo").stdout
    if f" {c.pod_range} " not in shown:
        run_checked("ip", "addr", "add", c.pod_range, "dev", "lo")


def cloud_manifests(c: Cluster, stack: StackConfig) -> str:
    """What the simulated cloud gives the cluster before any stack runs, shaped like its stack
    (fake_cluster); a cluster without GPU nodes (a MultiKueue manager) keeps only the system
    node Kueue's own pod runs on, its namespaces and volumes."""
    objects = fake_cluster.objects(stack)
    if not c.gpu_nodes:
        objects = [
            o for o in objects if FLAVOR_ANNOTATION not in o["metadata"].get("annotations", {})
        ]
    return "\n---\n".join(json.dumps(o) for o in objects)


def start_cluster(c: Cluster, stack: StackConfig, manifest: Path, alone: bool = True) -> None:
    """Start one cluster; `alone`: the only one in the namespace (its Kueue may listen on every
    address, see sandbox.kueue_pod's --bind)."""
    ensure_pod_range(c)
    c.state.mkdir(parents=True, exist_ok=True)
    make_pki(c)
    start_control_plane(c)

    def run(*args: str, stdin: str | None = None) -> str:
        return kubectl(*args, stdin=stdin, kubeconfig=c.kubeconfig)

    run("apply", "-f", "-", stdin=cloud_manifests(c, stack))
    wait_for(f"{c.name}'s fake nodes Ready", lambda: fake_cluster.nodes_ready(run))
    if jobset.wanted(stack):
        # Kueue's jobset integration needs JobSet's CRD and controller (sandbox/jobset.py).
        jobset.start(c)
    if lws.wanted(stack):
        # Kueue's leaderworkerset integration needs LWS's CRD and controller (sandbox/lws.py).
        lws.start(c)
    if kuberay.wanted(stack):
        # Kueue's Ray integrations need KubeRay's CRDs and operator (sandbox/kuberay.py).
        kuberay.start(c)
    if trainer.wanted(stack):
        # Kueue's trainjob integration needs the Trainer's CRDs and manager (sandbox/trainer.py).
        trainer.start(c)
    if training_operator.wanted(stack) and alone:
        # Kueue's Kubeflow v1 integrations need the training-operator's CRDs and manager; its
        # webhooks take every address, so one cluster's only (sandbox/training_operator.py).
        training_operator.start(c, stack)
    if mpi_operator.wanted(stack, c):
        # Kueue's MPIJob integration needs the mpi-operator's CRD and controller
        # (sandbox/mpi_operator.py: the primary cluster's only).
        mpi_operator.start(c)
    if not stack.kueue.install:
        # The stack expects Kueue preinstalled: the cloud installed the same release.
        run("apply", "--server-side", "-f", str(manifest))
    spawn(
        c.process("kueue-pod"),
        [
            sys.executable,
            "-m",
            "sandbox.kueue_pod",
            f"--work={c.kueue_work}",
            f"--log={log_path(c.process('kueue'))}",
            f"--apiserver={c.address}:6443",
            f"--bind={'all' if alone else 'pod'}",
        ],
        env={"KUBECONFIG": str(c.kubeconfig)},
    )


# --- commands --------------------------------------------------------------------------


def keep_previous_logs() -> None:
    """The last sandbox's logs move to logs.previous (the one before goes), so this start's logs
    begin empty: its processes append to theirs, and a failed start's dump (sandbox.sh) would
    otherwise end with what the last sandbox said when it was stopped."""
    if LOGS.is_dir():
        previous = LOGS.with_name("logs.previous")
        shutil.rmtree(previous, ignore_errors=True)
        LOGS.rename(previous)


def up(
    stack_name: str = "local", stack_file: Path | None = None, topology_name: str | None = None
) -> None:
    """Start every cluster of the topology (default: $GPUQ_TOPOLOGY, else one cluster), each
    shaped like its stack (its flavors' nodes, adopted namespaces, shared volumes; fake_cluster)
    with its Kueue pod runner, and record which stack shaped the primary one. One cluster is
    shaped like the given stack; the other topologies' clusters by their own stacks."""
    t0 = time.monotonic()
    STATE.mkdir(parents=True, exist_ok=True)
    keep_previous_logs()
    name = topology_name or os.environ.get(topology.TOPOLOGY_ENV) or topology.SINGLE
    if name == topology.SINGLE:
        clusters = topology.single(stack_name, fake_cluster.stack_path(stack_name, stack_file))
    elif stack_name != "local" or stack_file is not None:
        raise fake_cluster.ShapeError(
            f"the {name} topology's clusters are shaped by its own stacks (sandbox/topology.py); "
            f"stack {stack_name!r} does not apply"
        )
    else:
        clusters = topology.clusters(name)
    # Every cluster's shape is refused before anything starts.
    stacks = [fake_cluster.load_stack(c.shape) for c in clusters]
    shapes = [
        fake_cluster.shape_of(c.stack, c.shape, s) for c, s in zip(clusters, stacks, strict=True)
    ]
    state = load_state()
    state["topology"] = name
    save_state(state)
    manifests = [rendered_path(shape.kueue_version) for shape in shapes]
    for shape, manifest in zip(shapes, manifests, strict=True):
        if not manifest.exists():
            render_kueue_manifest(shape.kueue_version)
    # Side by side: each cluster mostly waits for its own components to answer.
    with ThreadPoolExecutor(max_workers=len(clusters)) as pool:
        started = [
            pool.submit(start_cluster, *a, len(clusters) == 1)
            for a in zip(clusters, stacks, manifests, strict=True)
        ]
        for each in started:
            each.result()
    fake_cluster.write_shape(shapes[0])
    state = load_state()
    state["ready_seconds"] = round(time.monotonic() - t0, 1)
    save_state(state)
    shown = ", ".join(f"{c.name} {c.apiserver}" for c in clusters)
    print(f"sandbox: {name} ({shown}) ready in {state['ready_seconds']}s; KUBECONFIG={KUBECONFIG}")
    for c, shape in zip(clusters, shapes, strict=True):
        kept = "" if c.gpu_nodes else " (its flavor nodes left out: its jobs run elsewhere)"
        print(f"sandbox: {c.name} shaped like {shape.describe()}{kept}")


def down() -> None:
    state = load_state()
    for entry in reversed(list(state["processes"].values())):
        signal_group(entry, signal.SIGTERM)
    # The cluster's data is thrown away below, so nothing is gained by waiting out the API
    # server's graceful shutdown (it drains watches for a long time): a short grace, then KILL.
    deadline = time.monotonic() + 3
    while any(alive(e) for e in state["processes"].values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for entry in state["processes"].values():
        signal_group(entry, signal.SIGKILL)
    # The cluster's data and the sandbox stacks' state go together: a new cluster starts clean.
    # Each is removed even if another could not be: a half-removed sandbox would hand its
    # stale stack state (encrypted with a passphrase that is gone) to the next one.
    problems = []
    for path in (
        STATE_FILE,
        STATE / "etcd",
        PKI,
        KUBECONFIG,
        STATE / "kube-cache",  # kubectl's discovery cache (sandbox.sh sets KUBECACHEDIR)
        STATE / "kueue",
        STATE / "jobset",
        STATE / "lws",
        STATE / "training-operator",
        STATE / "pulumi",
        STATE / "project",
        STATE / "clusters",
        STATE / "rehearse",
        fake_cluster.SHAPE_FILE,
    ):
        try:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()
        except OSError as e:
            problems.append(f"{path}: {e}")
    if problems:
        raise RuntimeError("sandbox down could not remove: " + "; ".join(problems))


def running_topology() -> str:
    return str(load_state().get("topology") or topology.SINGLE)


def status() -> int:
    state = load_state()
    procs = state["processes"]
    ok = bool(procs) and all(alive(e) for e in procs.values())
    for name, entry in procs.items():
        print(f"{name:24} pid {entry['pid']:>7}  {'running' if alive(entry) else 'DEAD'}")
    return 0 if ok else 1


def logs(lines: int = 40) -> None:
    for log in sorted(LOGS.rglob("*.log")):
        print(f"===== {log.relative_to(LOGS)} (last {lines} lines)")
        print("\n".join(log.read_text(errors="replace").splitlines()[-lines:]))


def main() -> int:
    # Everything the sandbox writes (keys, tokens, etcd's data, logs) is its owner's alone, and
    # so is everything its processes write: they inherit the mask.
    os.umask(0o077)
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "up":
        # up [STACK [STACK_FILE]]: shaped like Pulumi.<STACK>.yaml (default local) or the file.
        args = sys.argv[2:]
        try:
            up(args[0] if args else "local", Path(args[1]) if len(args) > 1 else None)
        except fake_cluster.ShapeError as e:
            print(f"sandbox: {e}", file=sys.stderr)
            return 1
    elif cmd == "down":
        down()
    elif cmd == "status":
        return status()
    elif cmd == "topology":
        print(running_topology())
    elif cmd == "logs":
        logs()
    elif cmd == "restart" and len(sys.argv) == 3:
        down_for = restart(sys.argv[2])
        print(f"sandbox: {sys.argv[2]} restarted; down for {down_for:.1f}s")
    else:
        print(
            "usage: python -m sandbox.cluster up [STACK [STACK_FILE]]|down|status|topology|logs|"
            "restart COMPONENT",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
