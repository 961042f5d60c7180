"""The sandbox control plane: start, wait ready, kubeconfig, stop, logs.

Runs inside the sandbox's network namespace (sandbox/sandbox.sh puts it there). It starts
etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes and pods)
and the Kueue pod runner as detached processes, records their pids (with start times, so
a reused pid is never killed) in .sandbox/state.json and keeps each one's log in
.sandbox/logs/.
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
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from components.kueue_manifest import render_release, rendered_path
from components.pins import read_pins
from sandbox import fake_cluster
from sandbox.paths import BIN, KUBECONFIG, KUBECTL, LOGS, ROOT, STATE
from sandbox.procs import start_time

PKI = STATE / "pki"
STATE_FILE = STATE / "state.json"
# The very file the stacks pin (make kueue-manifest renders the same bytes).
KUEUE_MANIFEST = rendered_path(read_pins()["KUEUE_VERSION"])

APISERVER = "https://127.0.0.1:6443"
SERVICE_RANGE = "10.96.0.0/16"
POD_RANGE = "10.244.0.0/16"
READY_TIMEOUT = 90.0


def _run(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, check=True, text=True, capture_output=True, **kw)


# --- PKI -------------------------------------------------------------------------------


def _openssl_cert(name: str, subject: str, ca: str | None, san: str | None = None) -> None:
    key, crt = PKI / f"{name}.key", PKI / f"{name}.crt"
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
    csr = PKI / f"{name}.csr"
    _run("openssl", "req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr))
    ext = PKI / f"{name}.ext"
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
        str(PKI / f"{ca}.crt"),
        "-CAkey",
        str(PKI / f"{ca}.key"),
        "-CAcreateserial",
        "-days",
        "3650",
        "-extfile",
        str(ext),
        "-out",
        str(crt),
    )


def make_pki() -> None:
    """Certificates for one sandbox life: a CA, the API server, an admin, a front proxy."""
    if (PKI / "admin.crt").exists():
        return
    PKI.mkdir(parents=True, exist_ok=True)
    os.chmod(PKI, 0o700)
    _openssl_cert("ca", "/CN=gpu-queues-sandbox-ca", None)
    _openssl_cert(
        "apiserver",
        "/CN=kube-apiserver",
        "ca",
        "IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,"
        "DNS:kubernetes.default,DNS:kubernetes.default.svc",
    )
    _openssl_cert("admin", "/O=system:masters/CN=sandbox-admin", "ca")
    _openssl_cert("front-proxy-ca", "/CN=front-proxy-ca", None)
    _openssl_cert("front-proxy-client", "/CN=front-proxy-client", "front-proxy-ca")
    _run("openssl", "genrsa", "-out", str(PKI / "sa.key"), "2048")
    _run("openssl", "rsa", "-in", str(PKI / "sa.key"), "-pubout", "-out", str(PKI / "sa.pub"))
    # Whatever the caller's umask was: the CA and signing keys let anyone act as the cluster.
    for path in PKI.iterdir():
        path.chmod(0o600)


def write_kubeconfig() -> None:
    def b64(name: str) -> str:
        return base64.b64encode((PKI / name).read_bytes()).decode()

    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "sandbox",
        "clusters": [
            {
                "name": "sandbox",
                "cluster": {"server": APISERVER, "certificate-authority-data": b64("ca.crt")},
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
    KUBECONFIG.write_text(yaml.safe_dump(cfg))
    os.chmod(KUBECONFIG, 0o600)


# --- processes -------------------------------------------------------------------------


def _load_state() -> dict[str, Any]:
    if STATE_FILE.exists():
        loaded: dict[str, Any] = json.loads(STATE_FILE.read_text())
        return loaded
    return {"processes": {}}


def _save_state(state: dict[str, Any]) -> None:
    STATE_FILE.write_text(json.dumps(state, indent=2))


def _alive(entry: dict[str, Any]) -> bool:
    return bool(start_time(int(entry["pid"])) == entry["start"])


def spawn(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
    LOGS.mkdir(parents=True, exist_ok=True)
    with open(LOGS / f"{name}.log", "ab") as log:
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=ROOT,
            env={**os.environ, **(env or {})},
        )
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
    entry = _load_state()["processes"][name]
    started = time.monotonic()
    _stop(entry, grace)
    spawn(name, entry["argv"], entry.get("env"))
    if name == "kube-apiserver":
        _wait("kube-apiserver /readyz", lambda: _https_ok(f"{APISERVER}/readyz"))
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
                raise RuntimeError(f"{name} exited while waiting for {what}; see {LOGS / name}.log")
        time.sleep(0.2)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}: {last}")


def _https_ok(url: str, client: bool = True) -> bool:
    ctx = ssl.create_default_context(cafile=str(PKI / "ca.crt"))
    if client:
        ctx.load_cert_chain(str(PKI / "admin.crt"), str(PKI / "admin.key"))
    else:
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=2) as r:
        return bool(r.status == 200)


def kubectl(*args: str, stdin: str | None = None) -> str:
    return _run(str(KUBECTL), "--kubeconfig", str(KUBECONFIG), *args, input=stdin).stdout


def start_control_plane() -> None:
    data = STATE / "etcd"
    spawn(
        "etcd",
        [
            str(BIN / "etcd"),
            "--data-dir",
            str(data),
            "--unsafe-no-fsync",
            "--listen-client-urls",
            "http://127.0.0.1:2379",
            "--advertise-client-urls",
            "http://127.0.0.1:2379",
            "--listen-peer-urls",
            "http://127.0.0.1:2380",
            "--initial-advertise-peer-urls",
            "http://127.0.0.1:2380",
            "--initial-cluster",
            "default=http://127.0.0.1:2380",
            "--listen-metrics-urls",
            "http://127.0.0.1:2381",
        ],
    )
    _wait(
        "etcd",
        lambda: urllib.request.urlopen("http://127.0.0.1:2379/health", timeout=2).status == 200,
    )
    p = str(PKI)
    spawn(
        "kube-apiserver",
        [
            str(BIN / "kube-apiserver"),
            "--etcd-servers=http://127.0.0.1:2379",
            "--bind-address=127.0.0.1",
            "--secure-port=6443",
            "--advertise-address=127.0.0.1",
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
    write_kubeconfig()
    _wait("kube-apiserver /readyz", lambda: _https_ok(f"{APISERVER}/readyz"))
    kc = str(KUBECONFIG)
    common = [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
    ]
    spawn(
        "kube-controller-manager",
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
    spawn("kube-scheduler", [str(BIN / "kube-scheduler"), *common, "--secure-port=10259"])
    spawn(
        "kwok",
        [
            str(BIN / "kwok"),
            f"--kubeconfig={kc}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={fake_cluster.NODE_ANNOTATION}=fake",
            *(f"--config={c}" for c in kwok_stage_files()),
            f"--cidr={POD_RANGE}",
            # Nodes renew leases like kubelets, so the node lifecycle controller keeps them Ready.
            "--node-lease-duration-seconds=40",
            # The node's address: top of the pod range, clear of pod IPs (numbered from .0.1).
            "--node-ip=10.244.255.254",
            "--server-address=127.0.0.1:10247",
        ],
    )
    _wait(
        "kube-controller-manager",
        lambda: _https_ok("https://127.0.0.1:10257/healthz", client=False),
    )
    _wait("kube-scheduler", lambda: _https_ok("https://127.0.0.1:10259/healthz", client=False))
    _wait("default service account", lambda: bool(kubectl("get", "sa", "default", "-o", "name")))


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
    (components.kueue_manifest: the Kueue module's config/ with the pinned kubectl)."""
    render_release(version, ROOT, KUBECTL, offline=True)


# --- commands --------------------------------------------------------------------------


def up() -> None:
    t0 = time.monotonic()
    STATE.mkdir(exist_ok=True)
    make_pki()
    start_control_plane()
    stack = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    kubectl("apply", "-f", "-", stdin=fake_cluster.manifests(stack))
    _wait("fake nodes Ready", lambda: fake_cluster.nodes_ready(kubectl))
    if not KUEUE_MANIFEST.exists():
        render_kueue_manifest(read_pins()["KUEUE_VERSION"])
    spawn(
        "kueue-pod",
        [sys.executable, "-m", "sandbox.kueue_pod"],
        env={"KUBECONFIG": str(KUBECONFIG)},
    )
    state = _load_state()
    state["ready_seconds"] = round(time.monotonic() - t0, 1)
    _save_state(state)
    print(f"sandbox: control plane ready in {state['ready_seconds']}s; KUBECONFIG={KUBECONFIG}")


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
        STATE / "kueue",
        STATE / "pulumi",
        STATE / "project",
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


def status() -> int:
    state = _load_state()
    procs = state["processes"]
    ok = bool(procs) and all(_alive(e) for e in procs.values())
    for name, entry in procs.items():
        print(f"{name:24} pid {entry['pid']:>7}  {'running' if _alive(entry) else 'DEAD'}")
    return 0 if ok else 1


def logs(lines: int = 40) -> None:
    for log in sorted(LOGS.glob("*.log")):
        print(f"===== {log.name} (last {lines} lines)")
        print("\n".join(log.read_text(errors="replace").splitlines()[-lines:]))


def main() -> int:
    # Everything the sandbox writes (keys, tokens, etcd's data, logs) is its owner's alone, and
    # so is everything its processes write: they inherit the mask.
    os.umask(0o077)
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "up":
        up()
    elif cmd == "down":
        down()
    elif cmd == "status":
        return status()
    elif cmd == "logs":
        logs()
    elif cmd == "restart" and len(sys.argv) == 3:
        down_for = restart(sys.argv[2])
        print(f"sandbox: {sys.argv[2]} restarted; down for {down_for:.1f}s")
    else:
        print(
            "usage: python -m sandbox.cluster up|down|status|logs|restart COMPONENT",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
