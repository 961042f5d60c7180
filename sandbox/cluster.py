"""The sandbox control planes: start, wait ready, kubeconfig, stop, logs.

Runs inside the sandbox's network namespace (sandbox/sandbox.sh puts it there). For each
cluster of the topology (sandbox/topology.py: one cluster, or a MultiKueue manager and two
workers) it starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake
nodes and pods) and the Kueue pod runner as detached processes, each cluster on its own
loopback address, records their pids (with start times, so a reused pid is never killed) in
.sandbox/state.json and keeps each one's log in .sandbox/logs/.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.config.model import StackConfig
from gpu_queues.release.render import render_release, rendered_path
from sandbox import shape as fake_cluster
from sandbox import topology
from sandbox.paths import BIN, KUBECONFIG, KUBECTL, LOGS, ROOT, STATE
from sandbox.procs import start_time
from sandbox.topology import Cluster

STATE_FILE = STATE / "state.json"

PRIMARY = topology.single()[0]
PKI = PRIMARY.pki
APISERVER = PRIMARY.apiserver
SERVICE_RANGE = "10.96.0.0/16"
POD_RANGE = PRIMARY.pod_range
READY_TIMEOUT = 90.0


def _run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw)


# --- PKI -------------------------------------------------------------------------------


def _openssl_cert(
    pki: Path, name: str, subject: str, ca: str | None, san: str | None = None
) -> None:
    key, crt = pki / f"{name}.key", pki / f"{name}.crt"
    _run("openssl", "genrsa", "-out", str(key), "2048")
    if ca is None:
        _run(
            "openssl",
            "req",
            "-x509",
            "-new",
            "-key",
            str(key),
            "-subj",
            subject,
            "-days",
            "3650",
            "-out",
            str(crt),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
        )
        return
    csr = pki / f"{name}.csr"
    _run("openssl", "req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    ext = pki / f"{name}.ext"
    lines = [
        "basicConstraints=CA:FALSE",
        "keyUsage=critical,digitalSignature,keyEncipherment",
        "extendedKeyUsage=serverAuth,clientAuth",
    ]
    if san:
        lines.append(f"subjectAltName={san}")
    ext.write_text("\n".join(lines) + "\n")
    _run(
        "openssl",
        "x509",
        "-req",
        "-in",
        str(csr),
        "-CA",
        str(pki / f"{ca}.crt"),
        "-CAkey",
        str(pki / f"{ca}.key"),
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        str(ext),
        "-out",
        str(crt),
    )


def make_pki(c: Cluster = PRIMARY) -> None:
    """Certificates for one cluster's life: a CA, the API server, an admin, a front proxy.
    Each cluster has a CA of its own, as separate clusters do."""
    pki = c.pki
    if (pki / "admin.crt").exists():
        return
    pki.mkdir(parents=True, exist_ok=True)
    os.chmod(pki, 0o700)
    _openssl_cert(pki, "ca", f"/CN=gpu-queues-sandbox-{c.name}-ca", None)
    _openssl_cert(
        pki,
        "apiserver",
        "/CN=kube-apiserver",
        "ca",
        f"IP:{c.address},IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc",
    )
    _openssl_cert(pki, "admin", "/O=system:masters/CN=sandbox-admin", "ca")
    _openssl_cert(pki, "front-proxy-ca", "/CN=front-proxy-ca", None)
    _openssl_cert(pki, "front-proxy-client", "/CN=front-proxy-client", "front-proxy-ca")
    _run("openssl", "genrsa", "-out", str(pki / "sa.key"), "2048")
    _run("openssl", "rsa", "-in", str(pki / "sa.key"), "-pubout", "-out", str(pki / "sa.pub"))
    # Whatever the caller's umask was: the CA and signing keys let anyone act as the cluster.
    for path in pki.iterdir():
        path.chmod(0o600)


def write_kubeconfig(c: Cluster = PRIMARY) -> None:
    def b64(name: str) -> str:
        return base64.b64encode((c.pki / name).read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sandbox",
        "clusters": [
            {
                "name": "sandbox",
                "cluster": {"server": c.apiserver, "certificate-authority-data": b64("ca.crt")},
            }
        ],
        "users": [
            {
                "name": "sandbox-admin",
                "user": {
                    "client-certificate-data": b64("admin.crt"),
                    "client-key-data": b64("admin.key"),
                },
            }
        ],
        "contexts": [
            {"name": "sandbox", "context": {"cluster": "sandbox", "user": "sandbox-admin"}}
        ],
    }
    c.kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    c.kubeconfig.write_text(yaml.safe_dump(cfg))
    os.chmod(c.kubeconfig, 0o600)


# --- processes -------------------------------------------------------------------------


# Clusters start side by side: their records in state.json are updated one at a time.
_STATE_LOCK = threading.Lock()


def _load_state() -> dict[str, Any]:
    if STATE_FILE.exists():
        loaded: dict[str, Any] = json.loads(STATE_FILE.read_text())
        return loaded
    return {"processes": {}}


def _save_state(state: dict[str, Any]) -> None:
    """Replace the state file in one step: the clusters of a topology start in threads, and a
    reader (`_wait`) must never see a half-written file (a truncated read failed the
    MultiKueue sandbox's start with a JSON error)."""
    tmp = STATE_FILE.with_name(f".{STATE_FILE.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, STATE_FILE)


def _alive(entry: dict[str, Any]) -> bool:
    return bool(start_time(int(entry["pid"])) == entry["start"])


def log_path(name: str) -> Path:
    """A process's log: .sandbox/logs/<name>.log (a worker's under logs/<cluster>/)."""
    return LOGS / f"{name}.log"


def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    path = log_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
    with _STATE_LOCK:
        state = _load_state()
        state["processes"][name] = {
            "pid": proc.pid,
            "start": start_time(proc.pid),
            "argv": argv,
            "env": env or {},
        }
        _save_state(state)


def _stop(entry: dict[str, Any], grace: float) -> None:
    """SIGTERM the process group, SIGKILL it if still there after `grace` seconds."""
    if _alive(entry):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(entry["pid"]), signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(entry) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(entry):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(entry["pid"]), signal.SIGKILL)
        _wait_gone(entry)


def _wait_gone(entry: dict[str, Any], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _alive(entry):
        if time.monotonic() > deadline:
            raise RuntimeError(f"pid {entry['pid']} survived SIGKILL for {timeout:.0f}s")
        time.sleep(0.05)


def restart(name: str, grace: float = 10.0) -> float:
    """Stop one component and start it again with its recorded command, keeping every piece
    of its data (etcd's, for the API server). Waits until it is ready again (the API server's
    /readyz); returns how long it was down, in seconds."""
    state = _load_state()
    entry = state["processes"][name]
    started = time.monotonic()
    _stop(entry, grace)
    spawn(name, entry["argv"], entry.get("env"))
    for c in topology.clusters(state.get("topology")):
        if name == c.process("kube-apiserver"):
            _wait(f"{name} /readyz", lambda c=c: _https_ok(f"{c.apiserver}/readyz", c))
    return time.monotonic() - started


def _wait(what: str, check: Any, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except Exception as e:
            last = e
        for name, entry in _load_state()["processes"].items():
            if not _alive(entry):
                raise RuntimeError(f"{name} exited while waiting for {what}; see {log_path(name)}")
        time.sleep(0.2)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {last}")


def _https_ok(url: str, c: Cluster = PRIMARY, client: bool = True) -> bool:
    ctx = ssl.create_default_context(cafile=str(c.pki / "ca.crt"))
    if client:
        ctx.load_cert_chain(str(c.pki / "admin.crt"), str(c.pki / "admin.key"))
    else:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def kubectl(*args: str, stdin: str | None = None, kubeconfig: Path = KUBECONFIG) -> str:
    return _run(str(KUBECTL), "--kubeconfig", str(kubeconfig), *args, input=stdin).stdout


def start_control_plane(c: Cluster = PRIMARY) -> None:
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
    _wait(
        c.process("etcd"),
        lambda: urllib.request.urlopen(f"http://{a}:2379/health", timeout=2).status == 200,
    )
    p = str(c.pki)
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
    _wait(f"{c.process('kube-apiserver')} /readyz", lambda: _https_ok(f"{c.apiserver}/readyz", c))
    kc = str(c.kubeconfig)
    common = [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--leader-elect=false",
        f"--bind-address={a}",
    ]
    spawn(
        c.process("kube-controller-manager"),
        [
            str(BIN / "kube-controller-manager"),
            *common,
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
    spawn(
        c.process("kube-scheduler"),
        [str(BIN / "kube-scheduler"), *common, "--secure-port=10259"],
    )
    spawn(
        c.process("kwok"),
        [
            str(BIN / "kwok"),
            f"--kubeconfig={kc}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={fake_cluster.NODE_ANNOTATION}=fake",
            *(f"--config={c}" for c in kwok_stage_files()),
            f"--cidr={c.pod_range}",
            # Nodes renew leases like kubelets, so the node lifecycle controller keeps them Ready.
            "--node-lease-duration-seconds=40",
            # The node's address: top of the pod range, clear of pod IPs (numbered from .0.1).
            f"--node-ip={c.node_ip}",
            f"--server-address={a}:10247",
        ],
    )
    _wait(
        c.process("kube-controller-manager"),
        lambda: _https_ok(f"https://{a}:10257/healthz", c, client=False),
    )
    _wait(
        c.process("kube-scheduler"),
        lambda: _https_ok(f"https://{a}:10259/healthz", c, client=False),
    )
    _wait(
        f"{c.name}'s default service account",
        lambda: bool(kubectl("get", "sa", "default", "-o", "name", kubeconfig=c.kubeconfig)),
    )


def _module_dir(module: str, wrapper: str) -> Path:
    """Where the go command keeps a pinned module's source (it is in the module cache)."""
    out = _run(
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


def render_kueue_manifest(version: str) -> None:
    """The release manifest, rendered offline by the one render the stacks' pin comes from
    (gpu_queues.release.render: the Kueue module's config/ with the pinned kubectl)."""
    render_release(version, ROOT, KUBECTL, offline=True)


# --- commands --------------------------------------------------------------------------


def ensure_pod_range(c: Cluster) -> None:
    """The cluster's pod range on lo: a fake pod's IP answers inside the namespace only."""
    shown = _run("ip", "-o", "addr", "show", "dev", "lo").stdout
    if f" {c.pod_range} " not in shown:
        _run("ip", "addr", "add", c.pod_range, "dev", "lo")


def cloud_manifests(c: Cluster, stack: StackConfig) -> str:
    """What the simulated cloud gives the cluster before any stack runs, shaped like its stack
    (fake_cluster); a cluster without GPU nodes (a MultiKueue manager) keeps only the system
    node Kueue's own pod runs on, its namespaces and volumes."""
    objects = fake_cluster.objects(stack)
    if not c.gpu_nodes:
        objects = [
            o
            for o in objects
            if fake_cluster.FLAVOR_ANNOTATION not in o["metadata"].get("annotations", {})
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
    _wait(f"{c.name}'s fake nodes Ready", lambda: fake_cluster.nodes_ready(run))
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


def up(
    stack_name: str = "local", stack_file: Path | None = None, topology_name: str | None = None
) -> None:
    """Start every cluster of the topology (default: $GPUQ_TOPOLOGY, else one cluster), each
    shaped like its stack (its flavors' nodes, adopted namespaces, shared volumes; fake_cluster)
    with its Kueue pod runner, and record which stack shaped the primary one. One cluster is
    shaped like the given stack; the other topologies' clusters by their own stacks."""
    t0 = time.monotonic()
    STATE.mkdir(parents=True, exist_ok=True)
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
    state = _load_state()
    state["topology"] = name
    _save_state(state)
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
    state = _load_state()
    state["ready_seconds"] = round(time.monotonic() - t0, 1)
    _save_state(state)
    shown = ", ".join(f"{c.name} {c.apiserver}" for c in clusters)
    print(f"sandbox: {name} ({shown}) ready in {state['ready_seconds']}s; KUBECONFIG={KUBECONFIG}")
    for c, shape in zip(clusters, shapes, strict=True):
        kept = "" if c.gpu_nodes else " (its flavor nodes left out: its jobs run elsewhere)"
        print(f"sandbox: {c.name} shaped like {shape.describe()}{kept}")


def down() -> None:
    state = _load_state()
    for entry in reversed(list(state["processes"].values())):
        if _alive(entry):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(int(entry["pid"]), signal.SIGTERM)
    # The cluster's data is thrown away below, so nothing is gained by waiting out the API
    # server's graceful shutdown (it drains watches for a long time): a short grace, then KILL.
    deadline = time.monotonic() + 3
    while any(_alive(e) for e in state["processes"].values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    for entry in state["processes"].values():
        if _alive(entry):
            with contextlib.suppress(ProcessLookupError):  # it may have just exited
                os.killpg(int(entry["pid"]), signal.SIGKILL)
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
    return str(_load_state().get("topology") or topology.SINGLE)


def status() -> int:
    state = _load_state()
    procs = state["processes"]
    ok = bool(procs) and all(_alive(e) for e in procs.values())
    for name, entry in procs.items():
        print(f"{name:24} pid {entry['pid']:>7}  {'running' if _alive(entry) else 'DEAD'}")
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
