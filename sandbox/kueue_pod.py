"""Plays the kubelet for Kueue's controller pod in the sandbox.

kwok fakes every pod, including kueue-controller-manager's, so nothing would serve Kueue's
webhooks. This runner watches for that pod (as the stack's `pulumi up` creates it from the
release manifest), and when kwok has it Running, runs the real `kueue` binary as it: with
the pod's own args, its volumes (the kueue-manager-config ConfigMap, the webhook
certificate Secret Kueue itself fills, emptyDirs) materialised under .sandbox/kueue/ and
bind-mounted at the pod's mount paths in a private mount namespace, listening on the pod's
IP (sandbox/pod_isolation.py). The API server reaches it there (endpoint routing), exactly
as it would reach a pod. A new pod (rollout after a config change) restarts the process; a
crash restarts it with a kubelet's CrashLoopBackOff; no pod, no process. The binary is the
one of the pod's image tag (.toolchain/bin/kueue-<tag>: make toolchain links the pinned
release there, make toolchain-all every supported one), so an upgrade rolls onto the new
release's controller. One runner per sandbox cluster, each with its own work directory, log
and API server (`--work`, `--log`, `--apiserver`).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client

from gpu_queues.kueue.client import api_client
from sandbox.paths import BIN, LOGS, STATE
from sandbox.pod_isolation import bind_to_pod_ip, in_pod_root, private_dir, write_private
from sandbox.procs import start_time

WORK = STATE / "kueue"
LOG = LOGS / "kueue.log"
PID_FILE_NAME = "kueue.json"  # under WORK: the running kueue's pid, start time and pod
KUEUE = BIN / "kueue"
NAMESPACE = "kueue-system"
TOKEN_REFRESH_SECONDS = 1800
SELECTOR = "control-plane=controller-manager"
CONTAINER = "manager"
APISERVER = ("127.0.0.1", 6443)
CONFIG_FLAG = "--config="


def binary_for(image: str | None) -> Path:
    """The kueue binary of the image's tag (registry.k8s.io/kueue/kueue:v0.19.2 ->
    .toolchain/bin/kueue-v0.19.2), as a kubelet would pull that image."""
    tag = (image or "").rpartition(":")[2]
    if not tag or "/" in tag:
        raise RuntimeError(f"the controller image {image!r} names no release tag")
    return BIN / f"kueue-{tag}"


def _pulled(binary: Path) -> None:
    """A kubelet that cannot pull the image does not start the pod: say which is missing."""
    if not binary.is_file():
        raise RuntimeError(
            f"{binary} is missing: `make toolchain` links the pinned release's kueue binary, "
            "`make toolchain KUEUE_VERSIONS=<version>` adds one, `make toolchain-all` links "
            "every supported release (toolchain/go/kueue/<version>/)"
        )


class Process(Protocol):
    """What the runner needs of a started process (subprocess.Popen; a fake in unit tests)."""

    pid: int

    def poll(self) -> int | None: ...
    def send_signal(self, sig: int) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def kill(self) -> None: ...


@dataclass
class CrashLoopBackOff:
    """A kubelet's restart delay for a crashing container, scaled down for the sandbox: the
    first crash waits `initial`, each further one twice as long up to `cap`, and a run that
    lasted `stable_after` counts as healthy, so its crash starts again from `initial`.
    (A kubelet uses 10 s, 300 s and 10 minutes.)"""

    initial: float = 1.0
    cap: float = 30.0
    stable_after: float = 60.0
    crashes: int = 0  # since the last healthy run

    def delay_after(self, ran_for: float) -> float:
        """The wait before restarting a process that exited after running `ran_for` seconds."""
        if ran_for >= self.stable_after:
            self.crashes = 0
        self.crashes += 1
        return min(self.initial * 2.0 ** (self.crashes - 1), self.cap)

    def reset(self) -> None:
        self.crashes = 0


def playing(pod_uids: set[str], work: Path = WORK) -> bool:
    """Whether the runner's process is alive and plays one of these pods. A new pod Ready
    (kwok marks it so at once) is not yet a new process: the runner stops the old one first
    (it serves while it shuts down) and then starts the new one."""
    try:
        entry = json.loads((work / PID_FILE_NAME).read_text())
        pid, pod = int(entry["pid"]), entry.get("pod")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    started = entry.get("start")
    return pod in pod_uids and started is not None and start_time(pid) == started


class Runner:
    def __init__(
        self,
        core: Any | None = None,
        clock: Callable[[], float] = time.monotonic,
        backoff: CrashLoopBackOff | None = None,
        work: Path = WORK,
        log: Path = LOG,
        apiserver: tuple[str, int] = APISERVER,
        bind_pod_ip: bool = True,
    ) -> None:
        if core is None:  # $KUBECONFIG: the sandbox's admin, its key kept in memory
            core = client.CoreV1Api(api_client(None, None))
        # The client's models type every field Optional; read them as plain objects.
        self.core: Any = core
        self.clock = clock
        self.backoff = backoff or CrashLoopBackOff()
        self.work, self.log, self.apiserver = work, log, apiserver
        # False (a sandbox of one cluster): Kueue listens on every address, as its release
        # config says, so it also answers at the IPs of replicas no process plays (replicas: 2
        # has two pods in the webhook Service; one process runs). Several clusters share the
        # namespace, so there each Kueue must keep to its pod's IP (bind_to_pod_ip).
        self.bind_pod_ip = bind_pod_ip
        self.pid_file = work / PID_FILE_NAME
        self.proc: Process | None = None
        self.pod_uid: str | None = None  # the pod the process runs (or will run again) as
        self.started_at = 0.0
        self.next_start: float | None = None  # set while a crashed process waits to restart

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
            d = private_dir(private_dir(private_dir(self.work) / "volumes") / vol.name)
            dirs[vol.name] = d
            if vol.config_map is not None:
                cm = self.core.read_namespaced_config_map(vol.config_map.name, NAMESPACE)
                for key, value in (cm.data or {}).items():
                    write_private(d / key, value.encode())
            elif vol.secret is not None:
                try:
                    sec = self.core.read_namespaced_secret(vol.secret.secret_name, NAMESPACE)
                except client.ApiException as e:
                    if e.status != 404:
                        raise
                    continue
                for key, value in (sec.data or {}).items():
                    write_private(d / key, base64.b64decode(value))
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
                    write_private(path, token.status.token.encode())
            elif src.config_map is not None:
                cm = self.core.read_namespaced_config_map(src.config_map.name, NAMESPACE)
                for item in src.config_map.items or []:
                    write_private(d / item.path, (cm.data or {})[item.key].encode())
            elif src.downward_api is not None:
                for item in src.downward_api.items or []:
                    if item.field_ref and item.field_ref.field_path == "metadata.namespace":
                        write_private(d / item.path, NAMESPACE.encode())

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
        args = [self.bound_config(a, pod) for a in args]
        return in_pod_root(self.work, mounts, self.work, [str(binary), *args])

    def bound_config(self, arg: str, pod: Any) -> str:
        """`--config=<file>` pointing at a copy bound to the pod IP (bind_to_pod_ip)."""
        if not self.bind_pod_ip or not arg.startswith(CONFIG_FLAG):
            return arg
        pod_ip = pod.status.pod_ip
        source = Path(arg[len(CONFIG_FLAG) :])
        try:
            text = source.read_text()
        except OSError:
            return arg  # Kueue itself reports a config it cannot read
        bound = private_dir(self.work / "bound") / source.name
        write_private(bound, bind_to_pod_ip(text, pod_ip).encode())
        return f"{CONFIG_FLAG}{bound}"

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc, self.pod_uid, self.next_start = None, None, None
        self.pid_file.unlink(missing_ok=True)

    def say(self, line: str) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as log:
            log.write(f"--- {line}\n".encode())

    def launch(self, pod: Any, dirs: dict[str, Path]) -> Process:
        argv = self.command(pod, dirs)
        _pulled(binary_for(next(c for c in pod.spec.containers if c.name == CONTAINER).image))
        # In-cluster configuration, as a kubelet gives it: the API server's address plus the
        # mounted service account token, so Kueue runs with exactly its manifest's RBAC.
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        host, port = self.apiserver
        env.update(KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=str(port))
        self.say(f"starting kueue as pod {pod.metadata.name} ({pod.status.pod_ip})")
        with open(self.log, "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.work,
                env=env,
            )
        # unshare and sh exec in turn, so this pid becomes kueue's own: fault tests kill it.
        write_private(
            self.pid_file,
            json.dumps(
                {"pid": proc.pid, "start": start_time(proc.pid), "pod": pod.metadata.uid}
            ).encode(),
        )
        return proc

    def reconcile(self, pod_uid: str | None, launch: Callable[[], Process]) -> None:
        """One step of the kubelet's work: run the process as the pod, restart it after a
        crash once the backoff has passed, replace it for a new pod, stop it with no pod."""
        if pod_uid is None:
            self.stop()
            return
        if pod_uid != self.pod_uid:
            self.stop()
            self.backoff.reset()
            self._start(pod_uid, launch)
            return
        if self.proc is not None:
            code = self.proc.poll()
            if code is None:
                return
            # Seen once per exit: the delay is computed here, never pushed forward later.
            ran_for = self.clock() - self.started_at
            delay = self.backoff.delay_after(ran_for)
            self.proc, self.next_start = None, self.clock() + delay
            self.say(
                f"kueue exited with code {code} after {ran_for:.1f}s; "
                f"restarting in {delay:.0f}s (crash {self.backoff.crashes})"
            )
        if self.next_start is not None and self.clock() >= self.next_start:
            self._start(pod_uid, launch)

    def _start(self, pod_uid: str, launch: Callable[[], Process]) -> None:
        self.proc = launch()
        self.pod_uid, self.started_at, self.next_start = pod_uid, self.clock(), None

    def step(self) -> None:
        pod = self.current_pod()
        if pod is None:
            self.stop()
            return
        dirs = self.sync_volumes(pod)
        self.reconcile(pod.metadata.uid, lambda: self.launch(pod, dirs))

    def run(self) -> None:
        def terminate(*_: object) -> None:
            self.stop()
            sys.exit(0)

        signal.signal(signal.SIGTERM, terminate)
        private_dir(self.work)
        while True:
            try:
                self.step()
            except Exception as e:
                print(f"kueue-pod: {e}", file=sys.stderr, flush=True)
            time.sleep(0.5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m sandbox.kueue_pod", description=__doc__)
    parser.add_argument("--work", type=Path, default=WORK, help="the pod's files on the machine")
    parser.add_argument("--log", type=Path, default=LOG, help="kueue's output and restarts")
    parser.add_argument(
        "--apiserver", default=":".join(map(str, APISERVER)), help="HOST:PORT of the API server"
    )
    parser.add_argument(
        "--bind",
        choices=("pod", "all"),
        default="pod",
        help="pod: Kueue's servers on the pod's IP (several clusters in one namespace); "
        "all: on every address, so every replica's IP reaches the one process (one cluster)",
    )
    args = parser.parse_args(argv)
    host, _, port = args.apiserver.rpartition(":")
    os.umask(0o077)
    Runner(
        work=args.work,
        log=args.log,
        apiserver=(host, int(port)),
        bind_pod_ip=args.bind == "pod",
    ).run()


if __name__ == "__main__":
    main()
