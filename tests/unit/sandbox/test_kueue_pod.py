"""The sandbox's stand-in kubelet for Kueue's pod: CrashLoopBackOff on a fake clock, with
fake processes (no real process is started here)."""

from __future__ import annotations

import base64
import itertools
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from sandbox import kueue_pod as kueue_pod_module
from sandbox import pod_isolation
from sandbox.kueue_pod import CrashLoopBackOff, Runner
from sandbox.pod_isolation import pod_root_script

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeProcess:
    """A started process; `crash()` makes it exit as a SIGKILL would."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.code: int | None = None
        self.signals: list[int] = []

    def crash(self, code: int = -9) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code

    def send_signal(self, sig: int) -> None:
        self.signals.append(sig)
        self.code = -sig

    def wait(self, timeout: float | None = None) -> int:
        assert self.code is not None
        return self.code

    def kill(self) -> None:
        self.code = -9


class Kubelet:
    """A Runner with a fake clock and a launcher that records every start."""

    def __init__(self, tmp_path: Path, backoff: CrashLoopBackOff | None = None) -> None:
        self.clock = Clock()
        self.started: list[FakeProcess] = []
        self.runner = Runner(
            core=object(),
            clock=self.clock,
            backoff=backoff or CrashLoopBackOff(initial=1, cap=8, stable_after=60),
            work=tmp_path / "work",
            log=tmp_path / "kueue.log",
        )

    def launch(self) -> FakeProcess:
        proc = FakeProcess(len(self.started) + 1)
        self.started.append(proc)
        return proc

    def poll(self, pod: str | None = "pod-1", seconds: float = 0.5) -> None:
        """The runner's loop: one reconcile, then time passes."""
        self.runner.reconcile(pod, self.launch)
        self.clock.now += seconds

    def poll_for(self, seconds: float, pod: str | None = "pod-1") -> None:
        for _ in range(round(seconds / 0.5)):
            self.poll(pod)

    def crash_and_wait_for_restart(self) -> float:
        """Crash the process; poll until it is restarted (or fail); returns the time it was."""
        self.current.crash()
        count = len(self.started)
        deadline = self.clock.now + 600
        while len(self.started) == count:
            assert self.clock.now < deadline, "never restarted"
            self.poll()
        return self.clock.now

    @property
    def current(self) -> FakeProcess:
        return self.started[-1]


def test_backoff_doubles_up_to_its_cap_and_resets_after_a_stable_run() -> None:
    b = CrashLoopBackOff(initial=1, cap=8, stable_after=60)
    assert [b.delay_after(0.1) for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    assert b.delay_after(59.9) == 8  # not long enough to count as healthy
    assert b.delay_after(60) == 1  # a healthy run: the next crash starts the count again
    assert b.delay_after(0.1) == 2


def test_the_first_poll_starts_the_pod_and_a_healthy_process_is_left_alone(
    tmp_path: Path,
) -> None:
    k = Kubelet(tmp_path)
    k.poll_for(30)
    assert len(k.started) == 1
    assert k.current.signals == []


def test_a_second_quick_crash_is_restarted_after_the_doubled_delay(tmp_path: Path) -> None:
    # The bug this guards: the restart time was pushed forward on every poll while the
    # process was down, so after a second quick crash it was never restarted.
    k = Kubelet(tmp_path)
    k.poll()
    k.current.crash()
    k.poll_for(0.5)  # the exit is seen: restart after 1 s
    assert len(k.started) == 1
    k.poll_for(1)
    assert len(k.started) == 2
    k.current.crash()  # crashes again at once
    k.poll_for(1.5)  # 2 s backoff now: not yet
    assert len(k.started) == 2
    k.poll_for(1)
    assert len(k.started) == 3
    k.poll_for(30)
    assert len(k.started) == 3


def test_a_crash_looping_process_keeps_being_restarted_with_capped_backoff(
    tmp_path: Path,
) -> None:
    k = Kubelet(tmp_path)
    k.poll()
    restarts_at = [k.crash_and_wait_for_restart() for _ in range(8)]
    gaps = [round(b - a) for a, b in itertools.pairwise(restarts_at)]
    # Each crash is immediate, so each gap is the backoff (to the poll's resolution).
    assert gaps == [2, 4, 8, 8, 8, 8, 8]


def test_a_crash_after_a_stable_run_restarts_after_the_initial_delay(tmp_path: Path) -> None:
    k = Kubelet(tmp_path)
    k.poll()
    for _ in range(3):  # three quick crashes: the backoff is at 4 s
        k.crash_and_wait_for_restart()
    k.poll_for(120)  # then it runs fine for two minutes
    k.current.crash()
    count = len(k.started)
    k.poll_for(1.5)
    assert len(k.started) == count + 1


def test_a_new_pod_replaces_the_process_at_once_and_forgets_the_backoff(tmp_path: Path) -> None:
    k = Kubelet(tmp_path)
    k.poll()
    for _ in range(3):
        k.crash_and_wait_for_restart()
    old = k.current
    k.poll("pod-2")  # a rollout: the old process is stopped, the new one starts now
    assert old.signals and len(k.started) == 5
    k.current.crash()
    k.poll_for(1.5)
    assert len(k.started) == 6


def test_no_pod_stops_the_process_and_a_crashed_one_is_not_restarted(tmp_path: Path) -> None:
    k = Kubelet(tmp_path)
    k.poll()
    running = k.current
    k.poll(None)
    assert running.signals
    k.poll_for(10, pod=None)
    assert len(k.started) == 1
    k.poll()  # the pod is back
    assert len(k.started) == 2


def test_every_exit_and_restart_delay_is_logged(tmp_path: Path) -> None:
    k = Kubelet(tmp_path)
    k.poll()
    k.current.crash(2)
    k.poll_for(2)
    k.current.crash()
    k.poll_for(3)
    log = (tmp_path / "kueue.log").read_text()
    assert "kueue exited with code 2 after 0.5s; restarting in 1s (crash 1)" in log
    assert "kueue exited with code -9 after 1.0s; restarting in 2s (crash 2)" in log


# --- the pod's private root --------------------------------------------------------------

POD_MOUNTS = [
    "/tmp/k8s-webhook-server/serving-certs",
    "/visibility",
    "/var/run/secrets/kubernetes.io/serviceaccount",
]


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A small machine: /var/run is a symlink to /run, /bin to usr/bin, /tmp has things in it."""
    h = tmp_path / "host"
    for d in ("tmp/other", "run/netns", "usr/bin", "var/lib", "work/checkout", "proc"):
        (h / d).mkdir(parents=True)
    (h / "tmp").chmod(0o1777)
    (h / "tmp" / "keep.txt").write_text("x")
    (h / "run" / "lock").write_text("")
    (h / "var" / "run").symlink_to("../run")
    (h / "bin").symlink_to("usr/bin")
    return h


def commands(script: str) -> list[str]:
    return [line for line in script.splitlines() if line and line != "set -e"]


def test_the_pod_root_makes_the_mount_paths_inside_itself_only(host: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    vols = [(tmp_path / f"vol{i}", target) for i, target in enumerate(POD_MOUNTS)]
    script = pod_root_script(root, vols, host / "work/checkout", ["/bin/kueue", "--x"], host=host)
    lines = commands(script)
    assert lines[0] == f"mount -t tmpfs -o mode=0755 gpuq-pod-root {root}"
    made: list[str] = []  # what each mkdir, touch, ln and mount creates or mounts on
    for line in lines[:-1]:
        for cmd in line.replace("2>/dev/null || :", "").split("&&"):
            words = cmd.replace("{", "").replace("}", "").replace(";", "").split()
            if words and words[0] in ("mkdir", "touch", "ln", "mount"):
                made.append(words[-1])
    # Everything created or mounted on is inside the root: nothing is made on the machine.
    assert made and all(Path(p).is_relative_to(root) for p in made), made
    # The mount paths are made in the tmpfs, /var/run's through the machine's symlink.
    for target in ("tmp/k8s-webhook-server/serving-certs", "visibility", "run/secrets"):
        assert any(line.startswith(f"mkdir -p {root}/{target}") for line in lines), target
    for i, target in (
        (0, "tmp/k8s-webhook-server/serving-certs"),
        (1, "visibility"),
        (2, "run/secrets/kubernetes.io/serviceaccount"),
    ):
        assert f"mount --bind {tmp_path}/vol{i} {root}/{target}" in lines
    # Directories on the way are the pod's own, showing the machine's other entries.
    assert f"mkdir -m 1777 {root}/tmp" in lines
    assert any(f"mount --bind {host}/tmp/keep.txt {root}/tmp/keep.txt" in ln for ln in lines)
    assert any(f"mount --bind {host}/run/netns {root}/run/netns" in ln for ln in lines)
    # Entries off the paths are shown whole (with their submounts), symlinks copied.
    assert f"{{ mkdir {root}/usr && mount --rbind {host}/usr {root}/usr; }}" in lines
    assert f"{{ mkdir {root}/var && mount --rbind {host}/var {root}/var; }}" in lines
    assert f"ln -s usr/bin {root}/bin" in lines
    assert lines[-1].startswith(f"exec chroot {root} /bin/sh -c ")
    assert f"cd {host}/work/checkout && exec /bin/kueue --x" in lines[-1]


def test_a_mount_path_that_exists_on_the_machine_is_covered_not_entered(
    host: Path, tmp_path: Path
) -> None:
    (host / "visibility" / "old").mkdir(parents=True)
    root = tmp_path / "root"
    script = pod_root_script(root, [(tmp_path / "v", "/visibility")], host, ["k"], host=host)
    mode = stat.S_IMODE((host / "visibility").stat().st_mode)
    assert f"mkdir -m {mode:o} {root}/visibility" in script
    assert "old" not in script  # its content is hidden by the volume, as in a pod


# --- the pod's volumes on the machine ----------------------------------------------------


def ns(**kw: object) -> SimpleNamespace:
    return SimpleNamespace(**kw)


class FakeCore:
    """The three reads the runner makes for the volumes of Kueue's pod."""

    def read_namespaced_secret(self, name: str, namespace: str) -> SimpleNamespace:
        key = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\n").decode()
        return ns(data={"tls.key": key, "tls.crt": key})

    def read_namespaced_config_map(self, name: str, namespace: str) -> SimpleNamespace:
        return ns(data={"ca.crt": "CA", "controller_manager_config.yaml": "kind: X\n"})

    def create_namespaced_service_account_token(
        self, name: str, namespace: str, body: object
    ) -> SimpleNamespace:
        return ns(status=ns(token="bound-token"))


def kueue_pod() -> SimpleNamespace:
    token = ns(path="token", expiration_seconds=3607, audience=None)
    projected = ns(
        sources=[
            ns(service_account_token=token, config_map=None, downward_api=None),
            ns(
                service_account_token=None,
                config_map=ns(name="kube-root-ca.crt", items=[ns(key="ca.crt", path="ca.crt")]),
                downward_api=None,
            ),
        ]
    )
    return ns(
        metadata=ns(name="kueue-controller-manager-x", uid="u1"),
        spec=ns(
            service_account_name="kueue-controller-manager",
            volumes=[
                ns(name="cert", config_map=None, secret=ns(secret_name="s"), projected=None),
                ns(name="manager-config", config_map=ns(name="c"), secret=None, projected=None),
                ns(name="kube-api-access", config_map=None, secret=None, projected=projected),
            ],
        ),
    )


def test_tokens_and_keys_are_written_for_their_owner_only_whatever_the_umask(
    tmp_path: Path,
) -> None:
    runner = Runner(core=FakeCore(), work=tmp_path / "work", log=tmp_path / "log")
    old = os.umask(0o022)
    try:
        dirs = runner.sync_volumes(kueue_pod())
    finally:
        os.umask(old)
    assert (dirs["cert"] / "tls.key").read_bytes().startswith(b"-----BEGIN PRIVATE KEY")
    assert (dirs["kube-api-access"] / "token").read_text() == "bound-token"
    for path in [tmp_path / "work", *(tmp_path / "work").rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), f"{path}: {oct(mode)}"


def test_the_pod_root_script_reaches_sh_through_a_private_file_whatever_its_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A machine's /tmp can hold hundreds of entries, each bound into the pod's root: the script
    # then outgrows what one argument may hold (128 KiB), and exec fails with E2BIG.
    big = "set -e\n" + "true\n" * 100_000
    monkeypatch.setattr(pod_isolation, "pod_root_script", lambda *a, **k: big)
    runner = Runner(core=FakeCore(), work=tmp_path / "work", log=tmp_path / "log")
    (tmp_path / "work").mkdir(mode=0o700)
    pod = kueue_pod()
    pod.spec.containers = [
        ns(
            name="manager",
            image="registry.k8s.io/kueue/kueue:v0.19.2",
            args=["--zap-log-level=2"],
            volume_mounts=[],
        )
    ]
    argv = runner.command(pod, {})
    assert sum(len(a) for a in argv) < 4096, argv
    script = Path(argv[-1])
    assert script.read_text() == big
    assert stat.S_IMODE(script.stat().st_mode) == 0o600
    # Long enough to fail as `sh -c` (Linux's MAX_ARG_STRLEN is 32 pages).
    assert len(big.encode()) > 32 * 4096


def test_the_runner_runs_the_binary_of_the_pods_image_tag(tmp_path: Path) -> None:
    """An upgrade rolls the pod to a new image: the sandbox runs that release's controller."""
    runner = Runner(core=FakeCore(), work=tmp_path / "work", log=tmp_path / "log")
    (tmp_path / "work").mkdir(mode=0o700)
    pod = kueue_pod()
    for tag in ("v0.18.3", "v0.19.2"):
        pod.spec.containers = [
            ns(
                name="manager",
                image=f"registry.k8s.io/kueue/kueue:{tag}",
                args=[],
                volume_mounts=[],
            )
        ]
        script = Path(runner.command(pod, {})[-1]).read_text()
        assert str(kueue_pod_module.BIN / f"kueue-{tag}") in script
    with pytest.raises(RuntimeError, match="names no release tag"):
        kueue_pod_module.binary_for("registry.k8s.io/kueue/kueue")
    with pytest.raises(RuntimeError, match=r"kueue-v9\.9\.9 is missing: `make toolchain`"):
        kueue_pod_module._pulled(kueue_pod_module.binary_for("x/kueue:v9.9.9"))


@pytest.mark.parametrize("bind_pod_ip", [True, False])
def test_kueue_keeps_to_its_pod_ip_only_when_clusters_share_the_namespace(
    tmp_path: Path, bind_pod_ip: bool
) -> None:
    """One cluster (bind_pod_ip False): the release config as written, every address, so a
    second replica's IP in the webhook Service reaches the one process (prod runs 2 replicas;
    binding to one pod's IP left the other refusing webhook calls). Several clusters: bound."""
    config = tmp_path / "controller_manager_config.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n")
    runner = Runner(
        core=FakeCore(), work=tmp_path / "work", log=tmp_path / "log", bind_pod_ip=bind_pod_ip
    )
    (tmp_path / "work").mkdir(mode=0o700)
    pod = kueue_pod()
    pod.status = ns(pod_ip="10.244.0.9")
    arg = f"{kueue_pod_module.CONFIG_FLAG}{config}"
    out = runner.bound_config(arg, pod)
    if not bind_pod_ip:
        assert out == arg
        return
    bound = yaml.safe_load(Path(out[len(kueue_pod_module.CONFIG_FLAG) :]).read_text())
    assert bound["webhook"]["host"] == "10.244.0.9"


def test_playing_names_the_pod_of_a_live_process_only(tmp_path: Path) -> None:
    """restart_kueue (tests/e2e) waits on this: a new pod is not a new process until the
    runner has started one as that pod, and a dead or reused pid plays nothing."""
    import json

    from sandbox.procs import start_time

    pid_file = tmp_path / kueue_pod_module.PID_FILE_NAME
    assert not kueue_pod_module.playing({"new"}, work=tmp_path)  # no process yet
    me = {"pid": os.getpid(), "start": start_time(os.getpid()), "pod": "new"}
    pid_file.write_text(json.dumps(me))
    assert kueue_pod_module.playing({"new", "other"}, work=tmp_path)
    assert not kueue_pod_module.playing({"old"}, work=tmp_path)  # still the old pod's process
    pid_file.write_text(json.dumps({**me, "start": "1"}))  # the pid now names another process
    assert not kueue_pod_module.playing({"new"}, work=tmp_path)
    pid_file.write_text(json.dumps({k: v for k, v in me.items() if k != "pod"}))
    assert not kueue_pod_module.playing({"new"}, work=tmp_path)  # written before pods were kept
