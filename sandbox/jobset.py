"""JobSet's controller in the sandbox, beside Kueue, when the stack's Kueue runs its jobset
integration (`jobset.x-k8s.io/jobset` in its manager Configuration, read as both what-if
engines read it; Kueue's release default has it).

The cloud installs JobSet as a cluster would: its CRD from the pinned module
(config/components/crd/bases, JOBSET_VERSION in toolchain/pins.env), then its controller
manager (.toolchain/bin/jobset, `toolchain/build.sh jobset`) as a process of the sandbox, then
its webhooks. There is no JobSet pod: the manager runs like the controller-manager, with the
cluster's admin kubeconfig (not JobSet's RBAC), on the cluster's loopback address only. Its own
certificate rotation (internalCertManagement) is off: the sandbox signs a serving certificate
for that address with the cluster's CA, hands it to the manager's webhook server (certDir) and
writes the release's two WebhookConfigurations with `url` and `caBundle` instead of a Service,
as envtest does. Kueue keeps :9443 and :8081 on every address of a one-cluster sandbox
(sandbox.kueue_pod), so JobSet takes other ports; its metrics server is off.
"""

from __future__ import annotations

import base64
import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues.config.model import StackConfig
from gpu_queues.config.multikueue_checks import DEFAULT_FRAMEWORKS
from gpu_queues.whatif.engine_input import frameworks, manager_configuration
from sandbox.control_plane import _module_dir, kubectl
from sandbox.paths import BIN
from sandbox.pki import _openssl_cert
from sandbox.procs import spawn, wait_for
from sandbox.topology import Cluster

FRAMEWORK: Final = "jobset.x-k8s.io/jobset"
MODULE: Final = "sigs.k8s.io/jobset"
WEBHOOK_PORT: Final = 9444
HEALTH_PORT: Final = 8181
# Kustomize's namePrefix in the module's config/default: the names the release installs.
NAME_PREFIX: Final = "jobset-"
CRD: Final = "jobsets.jobset.x-k8s.io"


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs its jobset integration. A MultiKueue manager that lists no
    integrations runs batch/job only (gpu_queues.components.multikueue.effective_kueue, which
    this repeats rather than import Pulumi's SDK into the sandbox's start)."""
    manager = config.multi_kueue.manager if config.multi_kueue else None
    listed = config.kueue.manager.integrations
    if manager is not None and (listed is None or listed.frameworks is None):
        return FRAMEWORK in DEFAULT_FRAMEWORKS
    return FRAMEWORK in frameworks(manager_configuration(config))


def module() -> Path:
    return _module_dir(MODULE, "jobset")


def crd_file() -> Path:
    return module() / "config" / "components" / "crd" / "bases" / "jobset.x-k8s.io_jobsets.yaml"


def webhook_configurations(
    c: Cluster, ca: bytes, source: Path | None = None
) -> list[dict[str, Any]]:
    """The module's WebhookConfigurations, each webhook dialled at the manager's loopback
    address (`url`) with the cluster's CA, in place of the release's Service and cert rotation."""
    path = source or module() / "config" / "components" / "webhook" / "manifests.yaml"
    bundle = base64.b64encode(ca).decode()
    out = []
    for doc in yaml.safe_load_all(path.read_text()):
        if not doc:
            continue
        doc["metadata"] = {"name": NAME_PREFIX + doc["metadata"]["name"]}
        for hook in doc.get("webhooks", []):
            service = hook["clientConfig"]["service"]
            hook["clientConfig"] = {
                "url": f"https://{c.address}:{WEBHOOK_PORT}{service['path']}",
                "caBundle": bundle,
            }
        out.append(doc)
    return out


def configuration(c: Cluster, cert_dir: Path) -> dict[str, Any]:
    """The manager's Configuration (config.jobset.x-k8s.io/v1alpha1): one replica, no cert
    rotation, every server on the cluster's address."""
    return {
        "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": WEBHOOK_PORT, "host": c.address, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"{c.address}:{HEALTH_PORT}"},
        "metrics": {"bindAddress": "0"},
    }


def _ready(c: Cluster) -> bool:
    url = f"http://{c.address}:{HEALTH_PORT}/readyz"
    with urllib.request.urlopen(url, timeout=2) as r:
        return bool(r.status == 200)


def start(c: Cluster) -> None:
    """JobSet's CRD, its manager (ready: certificates loaded, webhook server listening), then
    its webhooks, before Kueue's pod exists: the pod webhooks fail closed, as in a cluster."""
    binary = BIN / "jobset"
    if not binary.is_file():
        raise RuntimeError(f"{binary} is missing: run `bash toolchain/build.sh jobset`")
    work = c.state / "jobset"
    certs = work / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    if not (c.pki / "jobset-webhook.crt").exists():
        _openssl_cert(c.pki, "jobset-webhook", "/CN=jobset-webhook", "ca", f"IP:{c.address}")
        for p in c.pki.glob("jobset-webhook.*"):
            p.chmod(0o600)
    shutil.copyfile(c.pki / "jobset-webhook.crt", certs / "tls.crt")
    shutil.copyfile(c.pki / "jobset-webhook.key", certs / "tls.key")
    config = work / "config.yaml"
    config.write_text(json.dumps(configuration(c, certs), indent=1))
    kubectl("apply", "--server-side", "-f", str(crd_file()), kubeconfig=c.kubeconfig)
    established = "jsonpath={.status.conditions[?(@.type=='Established')].status}"
    wait_for(
        "JobSet's CRD established",
        lambda: kubectl("get", "crd", CRD, "-o", established, kubeconfig=c.kubeconfig) == "True",
    )
    spawn(
        c.process("jobset"),
        [str(binary), f"--config={config}", f"--kubeconfig={c.kubeconfig}"],
    )
    wait_for(f"{c.process('jobset')} /readyz", lambda: _ready(c))
    hooks = webhook_configurations(c, (c.pki / "ca.crt").read_bytes())
    kubectl(
        "apply",
        "-f",
        "-",
        stdin="\n---\n".join(json.dumps(h) for h in hooks),
        kubeconfig=c.kubeconfig,
    )
