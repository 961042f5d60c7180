"""The mpi-operator in the sandbox, beside Kueue, when the stack's Kueue runs its
`kubeflow.org/mpijob` integration (read as both what-if engines read it; Kueue's release
default has it) and the cluster is the sandbox's primary one.

The sandbox installs the mpi-operator as a cluster would, but as a process of the sandbox: its
MPIJob CRD from the pinned module (manifests/base, MPI_OPERATOR_VERSION in toolchain/pins.env),
then its operator (.toolchain/bin/mpi-operator, `toolchain/build.sh mpi_operator`) with the
cluster's admin kubeconfig. Like KubeRay's (sandbox/kuberay.py) it has no webhooks and no
certificates, and takes flags. Unlike every other operator here, v0.8.0's binary cannot be
told where to listen or not to elect a leader (cmd/mpi-operator/app/server.go):

- its health server takes :8080 on every address, a constant with no flag. The sandbox's
  clusters share one network namespace, so only one mpi-operator can run in it: the primary
  cluster's (a MultiKueue sandbox's primary is its manager, which runs batch/job only, so its
  workers' MPIJobs are not run there);
- it always elects a leader, through a Lease in --lock-namespace (default `mpi-operator`, a
  namespace the sandbox would have to make): kube-system here. One replica takes the Lease at
  its first try. It exits when it cannot renew the Lease for 5 s (renewDeadline, a constant;
  klog.Fatalf "Leader election stopped"), as when the API server restarts: on a cluster the
  kubelet starts its pod again, here the sandbox does (procs.restarting);
- its metrics server is off by default (--monitoring-port 0), left so.

The CRD is 670 KB, almost all of it field descriptions the API server parses at every `up`:
the sandbox installs a copy without them, written under the cluster's state folder
(`stripped_crd`; sandbox/README.md has what it saved). The operator makes an MPIJob's
launcher Job, worker pods, Service, ConfigMap and SSH Secret (its keys generated in-process: no
network); kwok runs the pods.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Final

from gpu_queues import yamlio
from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir
from sandbox.operators import install_crds, integration_on, without_descriptions
from sandbox.paths import BIN
from sandbox.procs import restarting, spawn, wait_for
from sandbox.topology import Cluster

NAME: Final = "mpi-operator"
FRAMEWORK: Final = "kubeflow.org/mpijob"
MODULE: Final = "github.com/kubeflow/mpi-operator"
WRAPPER: Final = "mpi-operator"
CRD: Final = "mpijobs.kubeflow.org"
# v0.8.0's health server: ":8080", hard-coded (healthCheckPort in cmd/mpi-operator/app).
HEALTH_PORT: Final = 8080
# Where it takes its leader-election Lease: a namespace every cluster has.
LOCK_NAMESPACE: Final = "kube-system"


def wanted(config: StackConfig, c: Cluster) -> bool:
    """Whether the stack's Kueue runs the MPIJob integration, on the one cluster of the
    sandbox that can run the mpi-operator (its primary: its health port is every address's)."""
    return c.primary and integration_on(config, FRAMEWORK)


def crd_file() -> Path:
    return _module_dir(MODULE, WRAPPER) / "manifests" / "base" / "kubeflow.org_mpijobs.yaml"


def stripped_crd(c: Cluster) -> Path:
    """The module's CRD without its `description` fields, under the cluster's state folder:
    72 KB of JSON instead of 322 KB, the same schema to the API server (descriptions are
    documentation only: kubectl explain shows them, nothing validates against them)."""
    crd = yamlio.load(crd_file().read_text(), str(crd_file()))
    out = c.state / NAME / "kubeflow.org_mpijobs.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(without_descriptions(crd)))
    return out


def argv(c: Cluster) -> list[str]:
    """The operator's command: the cluster's kubeconfig, its Lease in kube-system, every
    namespace watched; its metrics server stays off (no --monitoring-port)."""
    return [
        str(BIN / NAME),
        f"--kubeConfig={c.kubeconfig}",
        f"--lock-namespace={LOCK_NAMESPACE}",
    ]


def _ready(c: Cluster) -> bool:
    # /healthz is the leader election's watchdog: it answers once the process serves.
    with urllib.request.urlopen(f"http://{c.address}:{HEALTH_PORT}/healthz", timeout=2) as r:
        return bool(r.status == 200)


def start(c: Cluster) -> None:
    """The MPIJob CRD, then the operator, ready before Kueue's pod exists, as in a cluster that
    installed the mpi-operator first: Kueue sets up its mpijob controller at once, not after
    its waitForAPI retries (jobframework/setup.go) for a CRD that came later."""
    if not (BIN / NAME).is_file():
        raise RuntimeError(f"{BIN / NAME} is missing: run `bash toolchain/build.sh mpi_operator`")
    install_crds(c, [stripped_crd(c)], [CRD])
    process = c.process(NAME)
    # KUBECONFIG, when set, overrides --kubeConfig (server.go): name this cluster's in both.
    spawn(process, restarting(argv(c)), env={"KUBECONFIG": str(c.kubeconfig)})
    wait_for(f"{process} /healthz", lambda: _ready(c))
