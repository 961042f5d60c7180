"""Kubeflow Trainer v2's controller manager in the sandbox, beside Kueue and JobSet, when the
stack's Kueue runs its `trainer.kubeflow.org/trainjob` integration (read as both what-if engines
read it) and its jobset integration: the Trainer makes a JobSet of each TrainJob, which only
JobSet's controller (sandbox/jobset.py) turns into Jobs.

The cloud installs it as sandbox/operators.py installs JobSet and LWS: its CRDs from the pinned
module (manifests/base/crds, TRAINER_VERSION in toolchain/pins.env), then its controller manager
(.toolchain/bin/trainer, `toolchain/build.sh trainer`) as a process with the cluster's admin
kubeconfig, its certificate management off and a serving certificate the sandbox signs, then the
release's two WebhookConfigurations (TrainJob defaulting; TrainJob, TrainingRuntime and
ClusterTrainingRuntime validation) dialled by `url`. It differs in its Configuration
(config.trainer.kubeflow.org: `certManagement`, not `internalCertManagement`, decoded strictly)
and in where it reads its certificate: its Configuration names no certDir, so controller-runtime's
default, $TMPDIR/k8s-webhook-server/serving-certs, which the sandbox points into the cluster's
state folder. It takes :9446 for webhooks and :8184 for health on the cluster's address; its
metrics server is off, leader election too, its TrainJobStatus server (an alpha gate, off in
v2.2.1) as well.

Its three CRDs (all watched: TrainJobs and both runtimes) are 2.4 MB of YAML, 2.2 MB of which is
`description:` text the API server would take in at every `up`: the sandbox applies copies
without it (crds(), under the cluster's state folder), 0.19 MB in all, which made the apply and
wait for Established 2.0-3.8 s instead of 4.5-5.2 s here (6 December 2026, two of each, load
5-7). Nothing is lost but `kubectl explain`'s prose: validation and defaulting read the
schema's other fields. All of start() takes 5-8 s of an `up` (sandbox/README.md, Kubeflow
Trainer).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir, kubectl
from sandbox.jobset import FRAMEWORK as JOBSET_FRAMEWORK
from sandbox.operators import (
    Operator,
    install_crds,
    integration_on,
    manifests,
    without_descriptions,
)
from sandbox.paths import BIN
from sandbox.procs import spawn, wait_for
from sandbox.topology import Cluster

NAME: Final = "trainer"
FRAMEWORK: Final = "trainer.kubeflow.org/trainjob"
MODULE: Final = "github.com/kubeflow/trainer/v2"
WEBHOOK_PORT: Final = 9446
HEALTH_PORT: Final = 8184
GROUP: Final = "trainer.kubeflow.org"
CRDS: Final = ("trainjobs", "trainingruntimes", "clustertrainingruntimes")
# The release's WebhookConfigurations' names (manifests/base/webhook's patches, and the names
# its cert management would fill in: cmd/trainer-controller-manager/main.go).
WEBHOOK_NAMES: Final = {
    "MutatingWebhookConfiguration": "defaulter.trainer.kubeflow.org",
    "ValidatingWebhookConfiguration": "validator.trainer.kubeflow.org",
}


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs its trainjob integration and its jobset one. Without the
    jobset one the sandbox runs no JobSet controller (nor its CRD, which the Trainer's manager
    needs to start), and a TrainJob's JobSet would never run."""
    return integration_on(config, FRAMEWORK) and integration_on(config, JOBSET_FRAMEWORK)


def module() -> Path:
    return _module_dir(MODULE, NAME)


def crd_files() -> list[Path]:
    bases = module() / "manifests" / "base" / "crds"
    return [bases / f"{GROUP}_{plural}.yaml" for plural in CRDS]


def webhooks_file() -> Path:
    return module() / "manifests" / "base" / "webhook" / "manifests.yaml"


def crds(c: Cluster) -> list[Path]:
    """The CRDs as the sandbox applies them: the module's, without descriptions, written under
    the cluster's state folder (JSON, which kubectl reads as YAML)."""
    out = c.state / NAME / "crds"
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source in crd_files():
        doc = yaml.load(source.read_text(), Loader=yaml.CSafeLoader)
        target = out / f"{source.stem}.json"
        target.write_text(json.dumps(without_descriptions(doc), separators=(",", ":")))
        written.append(target)
    return written


# What the Trainer shares with JobSet and LWS (its certificate, its webhooks' clientConfig, its
# readiness); start() is its own, for its three CRDs and its Configuration's other shape.
OPERATOR: Final = Operator(
    NAME,
    f"trainjobs.{GROUP}",
    lambda: crd_files()[0],
    webhooks_file,
    "",
    WEBHOOK_PORT,
    HEALTH_PORT,
    f"config.{GROUP}",
)


def configuration(c: Cluster) -> dict[str, Any]:
    """The manager's Configuration: one replica, no cert management, every server on the
    cluster's address. Its decoder is strict: no certDir (there is none)."""
    return {
        "apiVersion": f"{OPERATOR.config_group}/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "certManagement": {"enable": False},
        "webhook": {"port": WEBHOOK_PORT, "host": c.address},
        "health": {"healthProbeBindAddress": f"{c.address}:{HEALTH_PORT}"},
        "metrics": {"bindAddress": "0"},
    }


def webhook_configurations(
    c: Cluster, ca: bytes, source: Path | None = None
) -> list[dict[str, Any]]:
    """The module's WebhookConfigurations dialled at the manager (Operator says how), under the
    names the release gives them."""
    docs = manifests(source or webhooks_file())
    written = OPERATOR.webhook_configurations(c, ca, docs)
    for doc in written:
        doc["metadata"]["name"] = WEBHOOK_NAMES[doc["kind"]]
    return written


def start(c: Cluster) -> None:
    """The CRDs, the manager (ready: certificate loaded, webhook server listening), then its
    webhooks, before Kueue's pod exists, as in a cluster that installed the Trainer first."""
    binary = BIN / NAME
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: run `bash toolchain/build.sh {NAME}`")
    work = c.state / NAME
    tmp = work / "tmp"
    OPERATOR._certificates(c, tmp / "k8s-webhook-server" / "serving-certs")
    config = work / "config.yaml"
    config.write_text(json.dumps(configuration(c), indent=1))
    install_crds(c, crds(c), [f"{plural}.{GROUP}" for plural in CRDS])
    process = c.process(NAME)
    argv = [str(binary), f"--config={config}", f"--kubeconfig={c.kubeconfig}"]
    spawn(process, argv, env={"TMPDIR": str(tmp)})
    wait_for(f"{process} /readyz", lambda: OPERATOR._ready(c))
    written = webhook_configurations(c, (c.pki / "ca.crt").read_bytes())
    stdin = "\n---\n".join(json.dumps(h) for h in written)
    kubectl("apply", "-f", "-", stdin=stdin, kubeconfig=c.kubeconfig)
