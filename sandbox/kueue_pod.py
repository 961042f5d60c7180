"""Plays the kubelet for Kueue's controller pod in the sandbox.

kwok fakes every pod, including kueue-controller-manager's, so nothing would serve Kueue's
webhooks. This runner watches for that pod (as the stack's `pulumi up` creates it from the
release manifest), and when kwok has it Running, runs the real `kueue` binary as it: with
the pod's own args, its volumes (the kueue-manager-config ConfigMap, the webhook
certificate Secret Kueue itself fills, emptyDirs) materialised under .sandbox/kueue/ and
bind-mounted at the pod's mount paths in a private mount namespace, listening on all
addresses of the network namespace, so on the pod's IP too. The API server reaches it there
(endpoint routing), exactly as it would reach a pod. A new pod (rollout after a config
change) restarts the process; a crash restarts it with backoff; no pod, no process. The
binary is the one of the pod's image tag (.toolchain/bin/kueue-<tag>, every supported release
is linked there by make toolchain), so an upgrade rolls onto the new release's controller.
"""

from __future__ import annotations

import base64
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kubernetes import client, config

from sandbox.paths import BIN, LOGS, STATE

WORK = STATE / "kueue"
LOG = LOGS / "kueue.log"
KUEUE = BIN / "kueue"
NAMESPACE = "kueue-system"
TOKEN_REFRESH_SECONDS = 1800
SELECTOR = "control-plane=controller-manager"
CONTAINER = "manager"


def _write_if_changed(path: Path, data: bytes) -> None:
    if path.exists() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def binary_for(image: str | None) -> Path:
    """The kueue binary of the image's tag (registry.k8s.io/kueue/kueue:v0.19.2 ->
    .toolchain/bin/kueue-v0.19.2), as a kubelet would pull that image."""
    tag = (image or "").rpartition(":")[2]
    binary = BIN / f"kueue-{tag}"
    if not tag or "/" in tag or not binary.is_file():
        raise RuntimeError(
            f"no kueue binary for image {image!r} ({binary} is missing): `make toolchain` links "
            "one for every supported release (toolchain/go/kueue/<version>/)"
        )
    return binary


class Runner:
    def __init__(self) -> None:
        config.load_kube_config()  # type: ignore[no-untyped-call]
        # The client's models type every field Optional; read them as plain objects.
        self.core: Any = client.CoreV1Api()
        self.proc: subprocess.Popen[bytes] | None = None
        self.pod_uid: str | None = None
        self.backoff = 1.0
        self.next_start = 0.0

    def current_pod(self) -> Any | None:
        pods = self.core.list_namespaced_pod(NAMESPACE, label_selector=SELECTOR).items
        running = [
            p
            for p in pods
            if p.metadata.deletion_timestamp is None
            and p.status.phase == "Running"
            and p.status.pod_ip
        ]
        return min(running, key=lambda p: p.metadata.creation_timestamp) if running else None

    def sync_volumes(self, pod: Any) -> dict[str, Path]:
        """Materialise the pod's volumes; returns volume name -> host directory."""
        dirs: dict[str, Path] = {}
        for vol in pod.spec.volumes or []:
            d = WORK / "volumes" / vol.name
            d.mkdir(parents=True, exist_ok=True)
            dirs[vol.name] = d
            if vol.config_map is not None:
                cm = self.core.read_namespaced_config_map(vol.config_map.name, NAMESPACE)
                for key, value in (cm.data or {}).items():
                    _write_if_changed(d / key, value.encode())
            elif vol.secret is not None:
                try:
                    sec = self.core.read_namespaced_secret(vol.secret.secret_name, NAMESPACE)
                except client.ApiException as e:
                    if e.status != 404:
                        raise
                    continue
                for key, value in (sec.data or {}).items():
                    _write_if_changed(d / key, base64.b64decode(value))
            elif vol.projected is not None:
                self.sync_projected(pod, vol.projected, d)
        return dirs

    def sync_projected(self, pod: Any, projected: Any, d: Path) -> None:
        """The service account volume the API server injects: a bound token, the cluster CA
        (kube-root-ca.crt) and the namespace, so the controller runs as its own service account."""
        for src in projected.sources or []:
            if src.service_account_token is not None:
                path = d / src.service_account_token.path
                fresh = path.exists() and time.time() - path.stat().st_mtime < TOKEN_REFRESH_SECONDS
                if not fresh:
                    spec: dict[str, Any] = {
                        "expirationSeconds": src.service_account_token.expiration_seconds or 3607,
                        "boundObjectRef": {
                            "kind": "Pod",
                            "apiVersion": "v1",
                            "name": pod.metadata.name,
                            "uid": pod.metadata.uid,
                        },
                    }
                    if src.service_account_token.audience:
                        spec["audiences"] = [src.service_account_token.audience]
                    token = self.core.create_namespaced_service_account_token(
                        pod.spec.service_account_name, NAMESPACE, {"spec": spec}
                    )
                    _write_if_changed(path, token.status.token.encode())
            elif src.config_map is not None:
                cm = self.core.read_namespaced_config_map(src.config_map.name, NAMESPACE)
                for item in src.config_map.items or []:
                    _write_if_changed(d / item.path, (cm.data or {})[item.key].encode())
            elif src.downward_api is not None:
                for item in src.downward_api.items or []:
                    if item.field_ref and item.field_ref.field_path == "metadata.namespace":
                        _write_if_changed(d / item.path, NAMESPACE.encode())

    def command(self, pod: Any, dirs: dict[str, Path]) -> list[str]:
        c = next(c for c in pod.spec.containers if c.name == CONTAINER)
        binary = binary_for(c.image)
        args = list(c.args or [])
        mounts: list[tuple[Path, str]] = []
        for m in c.volume_mounts or []:
            src = dirs[m.name]
            if m.sub_path:
                # A single-file mount: point the arguments at the materialised file instead.
                args = [a.replace(m.mount_path, str(src / m.sub_path)) for a in args]
            else:
                mounts.append((src, m.mount_path))
        script = "set -e\n"
        for src, target in mounts:
            t, q = shlex.quote(target), shlex.quote(str(src))
            script += f"mkdir -p {t}\nmount --bind {q} {t}\n"
        script += "exec " + " ".join(shlex.quote(a) for a in [str(binary), *args])
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script]

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc, self.pod_uid = None, None

    def start(self, pod: Any, dirs: dict[str, Path]) -> None:
        argv = self.command(pod, dirs)
        LOG.parent.mkdir(parents=True, exist_ok=True)
        # In-cluster configuration, as a kubelet gives it: the API server's address plus the
        # mounted service account token, so Kueue runs with exactly its manifest's RBAC.
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        env.update(KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="6443")
        with open(LOG, "ab") as log:
            log.write(
                f"--- starting kueue as pod {pod.metadata.name} ({pod.status.pod_ip})\n".encode()
            )
            log.flush()
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=WORK,
                env=env,
            )
        self.pod_uid = pod.metadata.uid

    def step(self) -> None:
        pod = self.current_pod()
        if pod is None:
            self.stop()
            return
        dirs = self.sync_volumes(pod)
        if self.pod_uid != pod.metadata.uid:
            self.stop()
            self.backoff = 1.0
            self.start(pod, dirs)
        elif self.proc is not None and self.proc.poll() is not None:
            if (
                time.monotonic() >= self.next_start
            ):  # crashed: restart with backoff, as a kubelet would
                self.start(pod, dirs)
            self.next_start = time.monotonic() + self.backoff
            self.backoff = min(self.backoff * 2, 30.0)

    def run(self) -> None:
        def terminate(*_: object) -> None:
            self.stop()
            sys.exit(0)

        signal.signal(signal.SIGTERM, terminate)
        WORK.mkdir(parents=True, exist_ok=True)
        while True:
            try:
                self.step()
            except Exception as e:
                print(f"kueue-pod: {e}", file=sys.stderr, flush=True)
            time.sleep(0.5)


if __name__ == "__main__":
    os.umask(0o077)
    Runner().run()
