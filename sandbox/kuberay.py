"""KubeRay's operator in the sandbox, beside Kueue, when the stack's Kueue runs its
`ray.io/raycluster` or `ray.io/rayjob` integration (read as both what-if engines read it;
Kueue's release default has both).

The cloud installs KubeRay as a cluster would, but as a process of the sandbox: its CRDs from
the pinned module (config/crd/bases, KUBERAY_VERSION in toolchain/pins.env), then its operator
(.toolchain/bin/kuberay, `toolchain/build.sh kuberay`) with the cluster's admin kubeconfig. It
differs from JobSet and LWS (sandbox/operators.py) in what it needs: no webhooks (the release
turns its RayCluster webhook on only with ENABLE_WEBHOOKS, which the sandbox leaves unset), no
certificates, and flags rather than a Configuration file. Its health probes take :8183 on the
cluster's address, its metrics server is off, leader election too; kwok plays its head and
worker pods. RayJobs are installed but not run for real: KubeRay's RayJob controller asks the
Ray head's dashboard over HTTP for the job's status, which a kwok pod cannot answer
(docs/what-if.md, Kinds).
"""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Final

from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir
from sandbox.operators import install_crds, integration_on
from sandbox.paths import BIN
from sandbox.procs import spawn, wait_for
from sandbox.topology import Cluster

NAME: Final = "kuberay"
FRAMEWORKS: Final = ("ray.io/raycluster", "ray.io/rayjob")
MODULE: Final = "github.com/ray-project/kuberay/ray-operator"
HEALTH_PORT: Final = 8183
# The CRDs of config/crd/bases its manager watches (it does not start without them):
# RayClusters, RayJobs, RayServices. Not RayCronJob's, watched only with its feature gate (off
# in v1.6.2): 0.7 MB of the 4 MB of schemas the API server would take in at every `up`.
CRDS: Final = ("rayclusters", "rayjobs", "rayservices")


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs either of its Ray integrations."""
    return any(integration_on(config, f) for f in FRAMEWORKS)


def crd_files() -> list[Path]:
    bases = _module_dir(MODULE, NAME) / "config" / "crd" / "bases"
    return [bases / f"ray.io_{plural}.yaml" for plural in CRDS]


def argv(c: Cluster) -> list[str]:
    """The operator's command: the cluster's kubeconfig, its probes on the cluster's address,
    no metrics server ("0"), no leader election (one replica)."""
    return [
        str(BIN / NAME),
        f"--kubeconfig={c.kubeconfig}",
        f"--health-probe-bind-address={c.address}:{HEALTH_PORT}",
        "--metrics-addr=0",
        "--enable-leader-election=false",
    ]


def _ready(c: Cluster) -> bool:
    with urllib.request.urlopen(f"http://{c.address}:{HEALTH_PORT}/readyz", timeout=2) as r:
        return bool(r.status == 200)


def start(c: Cluster) -> None:
    """KubeRay's CRDs, then its operator, ready before Kueue's pod exists, as in a cluster that
    installed KubeRay first: Kueue sets up its Ray controllers at once, not after its
    waitForAPI retries (jobframework/setup.go) for a CRD that came later."""
    if not (BIN / NAME).is_file():
        raise RuntimeError(f"{BIN / NAME} is missing: run `bash toolchain/build.sh {NAME}`")
    install_crds(c, crd_files(), [f"{plural}.ray.io" for plural in CRDS])
    process = c.process(NAME)
    spawn(process, argv(c))
    wait_for(f"{process} /readyz", lambda: _ready(c))
