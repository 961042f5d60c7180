"""One sandbox cluster's control plane, in named steps: etcd, kube-apiserver (with its admin
kubeconfig), kube-controller-manager, kube-scheduler and kwok (fake nodes and pods), each a
detached process (sandbox.procs) listening on the cluster's loopback address, then the waits
until each answers. The certificates come first (sandbox.pki).
"""

from __future__ import annotations

import json
import os
import ssl
import urllib.request
from pathlib import Path

from gpu_queues.whatif.nodes import NODE_ANNOTATION
from sandbox.paths import BIN, KUBECONFIG, KUBECTL, ROOT
from sandbox.pki import write_kubeconfig
from sandbox.procs import run_checked, spawn, wait_for
from sandbox.topology import Cluster

SERVICE_RANGE = "10.96.0.0/16"


def https_ok(url: str, c: Cluster, client: bool = True) -> bool:
    """Whether the URL answers 200 over TLS, as the cluster's admin (`client`) or anonymously
    without checking the serving certificate (the components' self-signed ones)."""
    ctx = ssl.create_default_context(cafile=str(c.pki / "ca.crt"))
    if client:
        ctx.load_cert_chain(str(c.pki / "admin.crt"), str(c.pki / "admin.key"))
    else:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def kubectl(*args: str, stdin: str | None = None, kubeconfig: Path = KUBECONFIG) -> str:
    return run_checked(str(KUBECTL), "--kubeconfig", str(kubeconfig), *args, input=stdin).stdout


def start_etcd(c: Cluster) -> None:
    a = c.address
    spawn(
        c.process("etcd"),
        [
            str(BIN / "etcd"),
            "--data-dir",
            str(c.etcd),
            "--unsafe-no-fsync",
            "--listen-client-urls",
            f"http://{a}:2379",
            "--advertise-client-urls",
            f"http://{a}:2379",
            "--listen-peer-urls",
            f"http://{a}:2380",
            "--initial-advertise-peer-urls",
            f"http://{a}:2380",
            "--initial-cluster",
            f"default=http://{a}:2380",
            "--listen-metrics-urls",
            f"http://{a}:2381",
        ],
    )
    wait_for(
        c.process("etcd"),
        lambda: urllib.request.urlopen(f"http://{a}:2379/health", timeout=2).status == 200,
    )


def start_apiserver(c: Cluster) -> None:
    a, p = c.address, str(c.pki)
    spawn(
        c.process("kube-apiserver"),
        [
            str(BIN / "kube-apiserver"),
            f"--etcd-servers=http://{a}:2379",
            f"--bind-address={a}",
            "--secure-port=6443",
            f"--advertise-address={a}",
            "--endpoint-reconciler-type=none",  # loopback endpoints are refused
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            f"--tls-cert-file={p}/apiserver.crt",
            f"--tls-private-key-file={p}/apiserver.key",
            f"--client-ca-file={p}/ca.crt",
            "--authorization-mode=RBAC",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p}/sa.pub",
            f"--service-account-signing-key-file={p}/sa.key",
            # Webhooks and aggregated APIs are dialled at their pods' endpoints (on lo), never at
            # a service IP: the service range exists only as numbers in the API.
            "--enable-aggregator-routing=true",
            f"--requestheader-client-ca-file={p}/front-proxy-ca.crt",
            "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User",
            "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={p}/front-proxy-client.crt",
            f"--proxy-client-key-file={p}/front-proxy-client.key",
            "--allow-privileged=true",
            "--profiling=false",
        ],
    )
    write_kubeconfig(c)
    wait_for(f"{c.process('kube-apiserver')} /readyz", lambda: https_ok(f"{c.apiserver}/readyz", c))


def _controller_flags(c: Cluster) -> list[str]:
    """What the controller-manager and the scheduler share: the admin kubeconfig for
    everything, no leader election, the cluster's address."""
    kc = str(c.kubeconfig)
    return [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--leader-elect=false",
        f"--bind-address={c.address}",
    ]


def start_controller_manager(c: Cluster) -> None:
    p = str(c.pki)
    spawn(
        c.process("kube-controller-manager"),
        [
            str(BIN / "kube-controller-manager"),
            *_controller_flags(c),
            "--secure-port=10257",
            f"--service-account-private-key-file={p}/sa.key",
            f"--root-ca-file={p}/ca.crt",
            f"--cluster-signing-cert-file={p}/ca.crt",
            f"--cluster-signing-key-file={p}/ca.key",
            "--use-service-account-credentials=false",
            "--allocate-node-cidrs=false",
            "--controllers=*,-nodeipam,-cloud-node-lifecycle,-service-lb-controller,-route",
        ],
    )


# The default profile's score plugins and weights at the pinned release (pkg/scheduler/apis/
# config/v1/default_plugins.go), each weight multiplied by TIE_SCALE, and the sandbox's two
# tie-breakers (toolchain/go/kubernetes/scheduler): weights 101 and 1 for at most 10,200 points
# in all, less than one point of the default plugins' total, so they decide only between nodes
# the default scoring holds equal, by name, as the fast what-if engine does. Upstream's scheduler
# takes whichever of those its parallel filter listed first: not the same from run to run.
# tests/toolchain keeps this list equal to the release's scoring plugins.
DEFAULT_SCORE_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
    "DynamicResources": 2,
}
TIE_SCALE = 101 * 101
TIE_BREAKERS = {"TieBreakByNameHigh": 101, "TieBreakByNameLow": 1}


def scheduler_config(kubeconfig: Path) -> dict[str, object]:
    """The sandbox's KubeSchedulerConfiguration: the default profile, ties broken by name."""
    score = [{"name": n, "weight": w * TIE_SCALE} for n, w in DEFAULT_SCORE_WEIGHTS.items()]
    score += [{"name": n, "weight": w} for n, w in TIE_BREAKERS.items()]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "leaderElection": {"leaderElect": False},
        # Pods that wait for a node are tried again, on each event that may free room, in the
        # order of their last failed try (the active queue's order, pod priority first), as on
        # a cluster where events come minutes apart and every backoff has long run out. With
        # the default backoff (1 s doubling to 10 s) a replay's events come within the backoff
        # and the queue orders the pods by when it ends, which goes by how often each was
        # tried: of two pods waiting, the one that waited less went first (seed 35 of the
        # cross-check). 1 s, the least the configuration takes, keeps the failure order.
        "podInitialBackoffSeconds": 1,
        "podMaxBackoffSeconds": 1,
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": {"score": {"enabled": score}}}
        ],
    }


def start_scheduler(c: Cluster) -> None:
    config = c.state / "kube-scheduler.yaml"
    config.write_text(json.dumps(scheduler_config(c.kubeconfig), indent=1))
    kc = str(c.kubeconfig)
    spawn(
        c.process("kube-scheduler"),
        [
            str(BIN / "kube-scheduler"),
            f"--config={config}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            f"--bind-address={c.address}",
            "--secure-port=10259",
        ],
    )


def start_kwok(c: Cluster) -> None:
    spawn(
        c.process("kwok"),
        [
            str(BIN / "kwok"),
            f"--kubeconfig={c.kubeconfig}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
            *(f"--config={stage}" for stage in kwok_stage_files()),
            f"--cidr={c.pod_range}",
            # Nodes renew leases like kubelets, so the node lifecycle controller keeps them Ready.
            "--node-lease-duration-seconds=40",
            # The node's address: top of the pod range, clear of pod IPs (numbered from .0.1).
            f"--node-ip={c.node_ip}",
            f"--server-address={c.address}:10247",
        ],
    )


def wait_controllers_ready(c: Cluster) -> None:
    """The controller-manager and scheduler answer, and the service account controller has
    made the default namespace's account (pods can be created)."""
    a = c.address
    wait_for(
        c.process("kube-controller-manager"),
        lambda: https_ok(f"https://{a}:10257/healthz", c, client=False),
    )
    wait_for(
        c.process("kube-scheduler"),
        lambda: https_ok(f"https://{a}:10259/healthz", c, client=False),
    )
    wait_for(
        f"{c.name}'s default service account",
        lambda: bool(kubectl("get", "sa", "default", "-o", "name", kubeconfig=c.kubeconfig)),
    )


def start_control_plane(c: Cluster) -> None:
    """etcd, then the API server once etcd answers, then the rest side by side once the API
    server is ready; returns when all of them answer."""
    start_etcd(c)
    start_apiserver(c)
    start_controller_manager(c)
    start_scheduler(c)
    start_kwok(c)
    wait_controllers_ready(c)


def _module_dir(module: str, wrapper: str) -> Path:
    """Where the go command keeps a pinned module's source (it is in the module cache)."""
    out = run_checked(
        "go",
        "list",
        "-m",
        "-f",
        "{{.Dir}}",
        module,
        cwd=ROOT / "toolchain" / "go" / wrapper,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off"},
    )
    # The namespace has no network: the module must already be in the cache, where
    # `make toolchain` put it when it built the binary.
    found = out.stdout.strip()
    if not found:
        raise RuntimeError(f"{module} is not in the Go module cache: run `make toolchain` first")
    return Path(found)


def kwok_stage_files() -> list[Path]:
    """kwok's own stages from its pinned module (nodes Ready with leases, pods Running and
    deleted), plus ours: Job pods run until deleted, or complete after a delay they ask for."""
    kwok = _module_dir("sigs.k8s.io/kwok", "kwok") / "kustomize" / "stage"
    return [
        kwok / "node/fast/node-initialize.yaml",
        kwok / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        kwok / "pod/fast/pod-ready.yaml",
        kwok / "pod/fast/pod-delete.yaml",
        ROOT / "sandbox" / "kwok-stages.yaml",
    ]
