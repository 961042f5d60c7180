"""Which control planes a sandbox runs: one cluster (the default), or a MultiKueue manager with
two workers. Each cluster gets its own loopback address (so every component keeps its usual
port), its own pod range on `lo`, its own state directory and its own shape: the stack file
whose flavors become its kwok nodes (sandbox/shape.py). A MultiKueue manager's jobs run
on its workers, so its cluster gets only the system node its stack's Kueue controller runs on.

The first cluster of a topology is the primary one: its paths are the sandbox's usual ones
(.sandbox/kubeconfig, .sandbox/pki, ...), so `make sandbox-shell` and the e2e suite talk to it,
and its processes keep their plain names. The others live under .sandbox/clusters/<name>/ and
their processes are named `<name>/<component>`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from sandbox import shape as fake_cluster
from sandbox.paths import KUBECONFIG, ROOT, STATE

TOPOLOGY_ENV: Final = "GPUQ_TOPOLOGY"
SINGLE: Final = "single"
MULTIKUEUE: Final = "multikueue"
E2E_STACKS: Final = ROOT / "tests" / "e2e" / "stacks"
# The sandbox stacks of the multikueue topology (tests/e2e/stacks): the workers' flavors shape
# their nodes; the manager has no GPU nodes, only a small system node for Kueue's own pod.
MK_MANAGER_STACK: Final = "local-mk-manager"
MK_WORKER_STACKS: Final = {"worker-a": "local-mk-worker-a", "worker-b": "local-mk-worker-b"}


@dataclass(frozen=True)
class Cluster:
    """One control plane of the sandbox."""

    name: str
    address: str
    """Its loopback address: etcd, the API server, controller-manager, scheduler and kwok all
    listen there on their usual ports."""
    pod_range: str
    """Where kwok numbers its pods (on lo inside the namespace, disjoint across clusters): the
    API server reaches Kueue's webhooks at the pod's IP in it."""
    state: Path
    stack: str
    shape: Path
    """The stack file whose flavors, shared volumes and Kueue controller make its nodes and
    volumes (sandbox/shape.py)."""
    primary: bool = False
    gpu_nodes: bool = True
    """False: only the system node for Kueue's own pod (a MultiKueue manager)."""

    @property
    def pki(self) -> Path:
        return self.state / "pki"

    @property
    def etcd(self) -> Path:
        return self.state / "etcd"

    @property
    def kubeconfig(self) -> Path:
        return KUBECONFIG if self.primary else self.state / "kubeconfig"

    @property
    def kueue_work(self) -> Path:
        return self.state / "kueue"

    @property
    def apiserver(self) -> str:
        return f"https://{self.address}:6443"

    def process(self, component: str) -> str:
        """The name its component has in state.json and the logs."""
        return component if self.primary else f"{self.name}/{component}"

    @property
    def node_ip(self) -> str:
        """The top of the pod range, clear of the pod IPs kwok numbers from the bottom."""
        base = self.pod_range.split("/", 1)[0].split(".")
        return f"{base[0]}.{base[1]}.255.254"


def single(stack: str = "local", shape: Path | None = None) -> list[Cluster]:
    """One cluster shaped like the stack (default local: Pulumi.local.yaml)."""
    path = shape or ROOT / f"Pulumi.{stack}.yaml"
    return [Cluster("sandbox", "127.0.0.1", "10.244.0.0/16", STATE, stack, path, True)]


def multikueue() -> list[Cluster]:
    manager = E2E_STACKS / f"Pulumi.{MK_MANAGER_STACK}.yaml"
    clusters = [
        Cluster(
            "manager", "127.0.0.1", "10.244.0.0/16", STATE, MK_MANAGER_STACK, manager, True, False
        )
    ]
    for i, (name, stack) in enumerate(MK_WORKER_STACKS.items()):
        clusters.append(
            Cluster(
                name,
                f"127.0.0.{i + 2}",
                f"10.{245 + i}.0.0/16",
                STATE / "clusters" / name,
                stack,
                E2E_STACKS / f"Pulumi.{stack}.yaml",
            )
        )
    return clusters


TOPOLOGIES: Final = {SINGLE: single, MULTIKUEUE: multikueue}


def clusters(name: str | None = None) -> list[Cluster]:
    """The clusters of a topology (default: $GPUQ_TOPOLOGY, else one cluster)."""
    chosen = name or os.environ.get(TOPOLOGY_ENV) or SINGLE
    if chosen not in TOPOLOGIES:
        raise ValueError(
            f"unknown sandbox topology {chosen!r}; known: {', '.join(sorted(TOPOLOGIES))}"
        )
    return TOPOLOGIES[chosen]()


def by_name(topology: str, name: str) -> Cluster:
    for cluster in clusters(topology):
        if cluster.name == name:
            return cluster
    raise KeyError(f"no cluster {name!r} in sandbox topology {topology!r}")


def cluster_of_stack(stack: str) -> Cluster:
    """The sandbox cluster a sandbox stack deploys to: a MultiKueue worker stack to its worker,
    every other stack to the primary cluster."""
    for name, worker_stack in MK_WORKER_STACKS.items():
        if stack == worker_stack:
            return by_name(MULTIKUEUE, name)
    return clusters(SINGLE)[0]


def main(argv: list[str]) -> int:
    """`primary TOPOLOGY`: its primary cluster's stack name and stack file, one a line (what
    sandbox.sh records and checks a running sandbox's shape by). `check TOPOLOGY`: exit 1,
    saying why, if any of its clusters' stacks cannot shape a sandbox."""
    if len(argv) != 2 or argv[0] not in ("primary", "check"):
        print("usage: python -m sandbox.topology primary|check TOPOLOGY", file=sys.stderr)
        return 2
    try:
        chosen = clusters(argv[1])
    except ValueError as e:
        print(f"sandbox: {e}", file=sys.stderr)
        return 2
    if argv[0] == "primary":
        print(chosen[0].stack)
        print(chosen[0].shape)
        return 0
    for c in chosen:
        try:
            stack = fake_cluster.load_stack(c.shape)
            fake_cluster.shape_of(c.stack, c.shape, stack)
            missing = fake_cluster.kueue_binary_problem(stack.kueue.version)
            if missing:
                raise fake_cluster.ShapeError(missing)
        except fake_cluster.ShapeError as e:
            print(f"sandbox: {c.name}: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
