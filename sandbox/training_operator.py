"""Kubeflow's training-operator v1 in the sandbox, beside Kueue, when the stack's Kueue runs any
of its integrations (`kubeflow.org/pytorchjob`, tfjob, xgboostjob, paddlejob, jaxjob; Kueue's
release default has them all).

The cloud installs it as a cluster would, but as a process of the sandbox: the CRDs of those
integrations only, from the pinned module (manifests/base/crds, TRAINING_OPERATOR_VERSION in
toolchain/pins.env), then its manager (.toolchain/bin/training-operator, `toolchain/build.sh
training_operator`) with the cluster's admin kubeconfig and one --enable-scheme per kind, then
its ValidatingWebhookConfiguration dialled by `url`. Not MPIJob v1's CRD nor scheme: Kueue's
kubeflow.org/mpijob integration is the mpi-operator's v2beta1 MPIJob.

It differs from JobSet and LWS (sandbox/operators.py) in its certificates: v1.9.3 always runs
open-policy-agent's cert rotator, which keeps its CA and serving certificate in the Secret
kubeflow/training-operator-webhook-cert, waits for the certificate at the fixed path
/tmp/k8s-webhook-server/serving-certs and writes the CA into the webhook configuration named
validator.training-operator.kubeflow.org; there is no flag to turn it off. So the sandbox
makes that Secret first with a CA of the operator's own (its key must be PKCS #1, the rotator
parses it so) and a serving certificate for both the Service name the rotator checks and the
cluster's address the API server dials; the rotator finds them valid and keeps them. The
operator runs in a private mount namespace, in a root built as Kueue's pod's is, where that
fixed path is the cluster's own folder: two sandboxes never share it, and it is never made on
the machine. Its webhook server listens on every address (v1.9.3 has no
host flag) at :9447, so only a sandbox of one cluster runs it; its probes take :8186 on the
cluster's address, its metrics server is off, leader election too, gang scheduling too (no
Volcano nor scheduler-plugins). kwok plays its pods.
"""

from __future__ import annotations

import base64
import json
import urllib.request
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues.config.model import StackConfig
from sandbox.control_plane import _module_dir, kubectl
from sandbox.operators import install_crds, integration_on, without_descriptions
from sandbox.paths import BIN, ROOT
from sandbox.pod_isolation import in_pod_root
from sandbox.procs import run_checked, spawn, wait_for
from sandbox.topology import Cluster

NAME: Final = "training-operator"
MODULE: Final = "github.com/kubeflow/training-operator"
# Kueue's integration, the operator's --enable-scheme and the CRD's plural, per kind.
KINDS: Final = {
    "kubeflow.org/pytorchjob": "pytorchjobs",
    "kubeflow.org/tfjob": "tfjobs",
    "kubeflow.org/xgboostjob": "xgboostjobs",
    "kubeflow.org/paddlejob": "paddlejobs",
    "kubeflow.org/jaxjob": "jaxjobs",
}
WEBHOOK_PORT: Final = 9447
HEALTH_PORT: Final = 8186
# What v1.9.3's main and pkg/cert name (no flags for the last three in use here).
NAMESPACE: Final = "kubeflow"
SECRET: Final = "training-operator-webhook-cert"
SERVICE_DNS: Final = f"training-operator.{NAMESPACE}.svc"
CA_NAME: Final = "training-operator-ca"
WEBHOOK_CONFIGURATION: Final = "validator.training-operator.kubeflow.org"
CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
SECRET_KEYS: Final = ("ca.crt", "ca.key", "tls.crt", "tls.key")


def integrations(config: StackConfig) -> list[str]:
    """The stack's Kueue integrations this operator serves, in KINDS' order."""
    return [f for f in KINDS if integration_on(config, f)]


def wanted(config: StackConfig) -> bool:
    """Whether the stack's Kueue runs any of its integrations."""
    return bool(integrations(config))


def module() -> Path:
    return _module_dir(MODULE, NAME)


def crds(config: StackConfig, source: Path | None = None) -> list[dict[str, Any]]:
    """The CRDs of the stack's integrations, descriptions stripped."""
    bases = source or module() / "manifests" / "base" / "crds"
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # 0.2 s, not 2 s, per CRD
    return [
        without_descriptions(
            yaml.load((bases / f"kubeflow.org_{KINDS[f]}.yaml").read_text(), loader)
        )
        for f in integrations(config)
    ]


def webhook_configuration(
    c: Cluster, ca: bytes, config: StackConfig, source: Path | None = None
) -> dict[str, Any]:
    """The module's ValidatingWebhookConfiguration under the name the rotator looks for (its
    kustomize patch's), only the webhooks of the kinds run, each dialled at the cluster's
    address with the operator's CA."""
    path = source or module() / "manifests" / "base" / "webhook" / "manifests.yaml"
    (doc,) = [d for d in yaml.safe_load_all(path.read_text()) if d]
    plurals = {KINDS[f] for f in integrations(config)}
    bundle = base64.b64encode(ca).decode()
    hooks = []
    for hook in doc["webhooks"]:
        if set(hook["rules"][0]["resources"]) <= plurals:
            url = f"https://{c.address}:{WEBHOOK_PORT}{hook['clientConfig']['service']['path']}"
            hooks.append({**hook, "clientConfig": {"url": url, "caBundle": bundle}})
    return {**doc, "metadata": {"name": WEBHOOK_CONFIGURATION}, "webhooks": hooks}


def argv(c: Cluster, config: StackConfig) -> list[str]:
    """The operator's command: the cluster's kubeconfig, its probes on the cluster's address,
    its webhooks on a port of their own, no metrics server ("0"), no leader election, no gang
    scheduler, the schemes of the stack's integrations."""
    schemes = [f"--enable-scheme={f.split('/')[1]}" for f in integrations(config)]
    return [
        str(BIN / NAME),
        f"--kubeconfig={c.kubeconfig}",
        f"--health-probe-bind-address={c.address}:{HEALTH_PORT}",
        "--metrics-bind-address=0",
        "--leader-elect=false",
        f"--webhook-server-port={WEBHOOK_PORT}",
        *schemes,
    ]


def in_private_tmp(certs: Path, work: Path, command: list[str]) -> list[str]:
    """`command` in a mount namespace of its own, in a root that is the machine's but where
    CERT_DIR is `certs`: the root Kueue's pod gets (sandbox/pod_isolation.py), built at
    work/root by the script work/pod-root.sh, which creates nothing outside it. (A `mkdir -p`
    of CERT_DIR in the namespace made it on the machine: a private mount namespace still writes
    to the machine's /tmp.)"""
    return in_pod_root(work, [(certs, CERT_DIR)], ROOT, command)


def _openssl_req(certs: Path, name: str, cn: str, exts: list[str], *flags: str) -> None:
    """`name`.key (PKCS #1: the rotator parses the CA's key so) and `name`.crt with the
    extensions `exts`, valid ten years (beyond the rotator's 90-day look-ahead); `flags`: the
    CA that signs it, else it signs itself."""
    key = certs / f"{name}.key"
    run_checked("openssl", "genrsa", "-traditional", "-out", str(key), "2048")
    req = ["req", "-x509", "-new", "-key", str(key), "-subj", f"/CN={cn}", "-days", "3650"]
    added = [a for e in exts for a in ("-addext", e)]
    run_checked("openssl", *req, "-out", str(certs / f"{name}.crt"), *added, *flags)


def certificates(c: Cluster, work: Path) -> Path:
    """The operator's CA (its name as a DNS name: what the rotator verifies it by) and a
    serving certificate it signed for SERVICE_DNS (what the rotator verifies) and the
    cluster's address (what the API server dials), in `work`/certs under the names the
    rotator and the webhook server read: ca.crt, ca.key, tls.crt, tls.key."""
    certs = work / "certs"
    if (certs / "tls.crt").exists():
        return certs
    certs.mkdir(parents=True, exist_ok=True)
    certs.chmod(0o700)
    ca = [f"subjectAltName=DNS:{CA_NAME}", "basicConstraints=critical,CA:TRUE"]
    ca.append("keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment")
    _openssl_req(certs, "ca", CA_NAME, ca)
    tls = [f"subjectAltName=DNS:{SERVICE_DNS},IP:{c.address}", "basicConstraints=CA:FALSE"]
    tls.append("extendedKeyUsage=serverAuth")
    signer = ("-CA", str(certs / "ca.crt"), "-CAkey", str(certs / "ca.key"))
    _openssl_req(certs, "tls", SERVICE_DNS, tls, *signer)
    return certs


def secret(certs: Path) -> dict[str, Any]:
    """The rotator's Secret, holding the sandbox's certificates, so it keeps them."""
    data = {n: base64.b64encode((certs / n).read_bytes()).decode() for n in SECRET_KEYS}
    meta = {"name": SECRET, "namespace": NAMESPACE}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": data}


def _ready(c: Cluster) -> bool:
    with urllib.request.urlopen(f"http://{c.address}:{HEALTH_PORT}/readyz", timeout=2) as r:
        return bool(r.status == 200)


def start(c: Cluster, config: StackConfig) -> None:
    """Its CRDs, its namespace and Secret, its manager (ready: certificates loaded, webhook
    server listening), then its webhooks, before Kueue's pod exists (as sandbox/kuberay.py
    says why)."""
    if not (BIN / NAME).is_file():
        raise RuntimeError(
            f"{BIN / NAME} is missing: run `bash toolchain/build.sh training_operator`"
        )
    work = c.state / NAME
    certs = certificates(c, work)
    written = work / "crds.json"  # a List: one file for all
    written.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": crds(config)}))
    install_crds(c, [written], [f"{KINDS[f]}.kubeflow.org" for f in integrations(config)])
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    docs = [namespace, secret(certs)]
    stdin = "\n---\n".join(json.dumps(d) for d in docs)
    kubectl("apply", "-f", "-", stdin=stdin, kubeconfig=c.kubeconfig)
    process = c.process(NAME)
    spawn(
        process, in_private_tmp(certs, work, argv(c, config)), env={"MY_POD_NAMESPACE": NAMESPACE}
    )
    wait_for(f"{process} /readyz", lambda: _ready(c))
    hooks = webhook_configuration(c, (certs / "ca.crt").read_bytes(), config)
    kubectl("apply", "-f", "-", stdin=json.dumps(hooks), kubeconfig=c.kubeconfig)
