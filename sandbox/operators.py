"""What every job operator the sandbox runs beside Kueue has in common (sandbox/jobset.py,
sandbox/lws.py): whether the stack's Kueue runs its integration, and how the cloud installs it.

An operator is installed as a cluster would install it, but as a process of the sandbox, not a
pod: its CRD from its pinned module (read in the module cache), then its controller manager,
the real binary of `toolchain/build.sh <name>`, with the cluster's admin kubeconfig and its own
cert rotation off, its webhook server on the cluster's loopback address with a serving
certificate the sandbox signs with the cluster's CA, then the module's WebhookConfigurations
dialled there by `url` and `caBundle` in place of the release's Service, as envtest does. So
nothing it serves is reachable outside the sandbox's network namespace, and it reaches nothing
outside it either. Kueue keeps :9443 and :8081 on every address of a one-cluster sandbox
(sandbox.kueue_pod): each operator has ports of its own.
"""

from __future__ import annotations

import base64
import json
import shutil
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.config.model import StackConfig
from gpu_queues.config.multikueue_checks import DEFAULT_FRAMEWORKS
from gpu_queues.whatif.engine_input import frameworks, manager_configuration
from sandbox.control_plane import kubectl
from sandbox.paths import BIN
from sandbox.pki import _openssl_cert
from sandbox.procs import spawn, wait_for
from sandbox.topology import Cluster


def integration_on(config: StackConfig, framework: str) -> bool:
    """Whether the stack's Kueue runs the integration `framework`, read as both what-if engines
    read it. A MultiKueue manager that lists no integrations runs batch/job only
    (gpu_queues.components.multikueue.effective_kueue, which this repeats rather than import
    Pulumi's SDK into the sandbox's start)."""
    manager = config.multi_kueue.manager if config.multi_kueue else None
    listed = config.kueue.manager.integrations
    if manager is not None and (listed is None or listed.frameworks is None):
        return framework in DEFAULT_FRAMEWORKS
    return framework in frameworks(manager_configuration(config))


@dataclass(frozen=True)
class Operator:
    """One operator: its binary and process name, its CRD, its webhooks' manifests and the
    names the release gives them, its ports, and its manager's Configuration's API group."""

    name: str
    crd: str
    """The CRD's name, to wait for it Established."""
    crd_file: Callable[[], Path]
    webhooks_file: Callable[[], Path]
    name_prefix: str
    """Kustomize's namePrefix in the module's config/default: the names the release installs."""
    webhook_port: int
    health_port: int
    config_group: str
    """The API group of the manager's Configuration (`<group>/v1alpha1`, config.<operator's
    group>): the operators' Configurations have one shape and differ only in it and the ports."""

    def configuration(self, c: Cluster, cert_dir: Path) -> dict[str, Any]:
        """The manager's Configuration: one replica, no cert rotation, every server on the
        cluster's address, the webhook server's certificate in `cert_dir`."""
        return {
            "apiVersion": f"{self.config_group}/v1alpha1",
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "webhook": {"port": self.webhook_port, "host": c.address, "certDir": str(cert_dir)},
            "health": {"healthProbeBindAddress": f"{c.address}:{self.health_port}"},
            "metrics": {"bindAddress": "0"},
        }

    def webhook_configurations(
        self, c: Cluster, ca: bytes, docs: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The module's WebhookConfigurations (`docs`), each webhook dialled at the manager's
        loopback address (`url`) with the cluster's CA, in place of the release's Service and
        cert rotation."""
        bundle = base64.b64encode(ca).decode()
        out = []
        for doc in docs:
            doc["metadata"] = {"name": self.name_prefix + doc["metadata"]["name"]}
            for hook in doc.get("webhooks", []):
                service = hook["clientConfig"]["service"]
                hook["clientConfig"] = {
                    "url": f"https://{c.address}:{self.webhook_port}{service['path']}",
                    "caBundle": bundle,
                }
            out.append(doc)
        return out

    def _ready(self, c: Cluster) -> bool:
        url = f"http://{c.address}:{self.health_port}/readyz"
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)

    def _certificates(self, c: Cluster, certs: Path) -> None:
        """A serving certificate for the cluster's address, signed by its CA, in `certs`."""
        name = f"{self.name}-webhook"
        certs.mkdir(parents=True, exist_ok=True)
        if not (c.pki / f"{name}.crt").exists():
            _openssl_cert(c.pki, name, f"/CN={name}", "ca", f"IP:{c.address}")
            for p in c.pki.glob(f"{name}.*"):
                p.chmod(0o600)
        shutil.copyfile(c.pki / f"{name}.crt", certs / "tls.crt")
        shutil.copyfile(c.pki / f"{name}.key", certs / "tls.key")

    def start(self, c: Cluster, hooks: list[dict[str, Any]]) -> None:
        """The CRD, the manager (ready: certificates loaded, webhook server listening), then
        its webhooks (`hooks`, the module's), before Kueue's pod exists: pod webhooks that
        fail closed are in place before any pod of a stack, as in a cluster."""
        binary = BIN / self.name
        if not binary.is_file():
            raise RuntimeError(f"{binary} is missing: run `bash toolchain/build.sh {self.name}`")
        work = c.state / self.name
        certs = work / "certs"
        self._certificates(c, certs)
        config = work / "config.yaml"
        config.write_text(json.dumps(self.configuration(c, certs), indent=1))
        install_crds(c, [self.crd_file()], [self.crd])
        process = c.process(self.name)
        spawn(process, [str(binary), f"--config={config}", f"--kubeconfig={c.kubeconfig}"])
        wait_for(f"{process} /readyz", lambda: self._ready(c))
        written = self.webhook_configurations(c, (c.pki / "ca.crt").read_bytes(), hooks)
        kubectl(
            "apply",
            "-f",
            "-",
            stdin="\n---\n".join(json.dumps(h) for h in written),
            kubeconfig=c.kubeconfig,
        )


def install_crds(c: Cluster, paths: list[Path], names: list[str]) -> None:
    """Apply CRDs (one kubectl for all, server-side: too large for client-side apply's
    annotation) and wait until every one of `names` (a CRD's name, as `jobsets.jobset.x-k8s.io`)
    is Established, polled with one kubectl for all (a one-shot `kubectl wait` right after the
    apply failed one `up` of the mpi-operator's first three; its message was not kept)."""
    kubectl("apply", "--server-side", *[a for p in paths for a in ("-f", str(p))],
            kubeconfig=c.kubeconfig)  # fmt: skip

    def all_established() -> bool:
        said = json.loads(kubectl("get", "crd", *names, "-o", "json", kubeconfig=c.kubeconfig))
        crds = said["items"] if said.get("kind") == "List" else [said]  # one name: the CRD
        said_of = [crd.get("status", {}).get("conditions", []) for crd in crds]
        established = [any(x["type"] == "Established" and x["status"] == "True" for x in conditions)
                       for conditions in said_of]  # fmt: skip
        return len(crds) == len(names) and all(established)

    wait_for(f"{', '.join(names)} established", all_established)


def without_descriptions(node: Any) -> Any:
    """A CRD (or any part of its schema) without its `description:` prose, most of a CRD's
    bytes and nothing the API server validates with; the schema is the same to it. A string
    only: a field named `description` is a mapping (its schema), kept."""
    if isinstance(node, dict):
        return {
            k: without_descriptions(v)
            for k, v in node.items()
            if not (k == "description" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [without_descriptions(v) for v in node]
    return node


def manifests(path: Path) -> list[dict[str, Any]]:
    """The non-empty YAML documents of a module's manifest file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
