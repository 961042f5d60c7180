"""The pinned toolchain: every binary reports its pin, and the real Pulumi CLI, with our
language host, the built Kubernetes provider and the policy analyzer, runs programs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from gpu_queues.pins import read_pins
from tests.fixtures.policy_programs import Program

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".toolchain" / "bin"
RUN = ROOT / "toolchain" / "run"
PINS = read_pins()


def tool(name: str) -> Path:
    path = BIN / name
    assert path.exists(), f"{path} is missing: run `make toolchain`"
    return path


def output(*argv: str | Path) -> str:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


@pytest.mark.parametrize(
    ("binary", "args", "expected"),
    [
        ("pulumi", ["version"], PINS["PULUMI_VERSION"]),
        ("pulumi-language-python", ["--version"], PINS["PULUMI_VERSION"]),
        ("kube-apiserver", ["--version"], f"Kubernetes {PINS['KUBERNETES_VERSION']}"),
        ("kube-controller-manager", ["--version"], f"Kubernetes {PINS['KUBERNETES_VERSION']}"),
        ("kube-scheduler", ["--version"], f"Kubernetes {PINS['KUBERNETES_VERSION']}"),
        ("kubectl", ["version", "--client"], f"Client Version: {PINS['KUBERNETES_VERSION']}"),
        ("etcd", ["--version"], f"etcd Version: {PINS['ETCD_VERSION'].lstrip('v')}"),
        ("kwok", ["--version"], PINS["KWOK_VERSION"]),
        ("kwokctl", ["--version"], PINS["KWOK_VERSION"]),
        ("actionlint", ["-version"], PINS["ACTIONLINT_VERSION"]),
        ("staticcheck", ["-version"], f"({PINS['STATICCHECK_VERSION'].lstrip('v')})"),
    ],
)
def test_binary_reports_its_pinned_version(binary: str, args: list[str], expected: str) -> None:
    assert expected in output(tool(binary), *args)


def test_kueue_reports_its_pinned_version() -> None:
    # kueue has no --version flag; it logs its build info first thing, then fails without a cluster.
    out = output(tool("kueue"), "--kubeconfig=/nonexistent")
    assert f'"gitVersion":"{PINS["KUEUE_VERSION"]}"' in out, out[:2000]


def test_jobset_reports_its_pinned_version(tmp_path: Path) -> None:
    # No --version flag either: it logs its build info once it has a kubeconfig (one that points
    # nowhere will do), then stops on the missing leader election namespace, reaching nothing.
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
    )
    out = output(
        tool("jobset"), f"--kubeconfig={kubeconfig}", "--metrics-bind-address=0",
        "--health-probe-bind-address=127.0.0.1:0",
    )  # fmt: skip
    assert f'"gitVersion": "{PINS["JOBSET_VERSION"]}"' in out, out[:2000]


def test_lws_reports_its_pinned_version() -> None:
    # Its main has a --version flag, which prints the ldflags' version and exits at once.
    out = output(tool("lws"), "--version")
    assert f"Version: {PINS['LWS_VERSION']}" in out.splitlines(), out[:2000]


def test_kuberay_is_built_from_its_pinned_module() -> None:
    # No --version flag and no version logged (v1.6.2's is a constant used in its user agent):
    # the binary's build info names the main module it was built from, at its version.
    out = output("go", "version", "-m", tool("kuberay"))
    assert "\tpath\tgithub.com/ray-project/kuberay/ray-operator" in out, out[:2000]
    mod = f"\tmod\tgithub.com/ray-project/kuberay/ray-operator\t{PINS['KUBERAY_VERSION']}\t"
    assert mod in out, out[:2000]


def test_training_operator_is_built_from_its_pinned_module() -> None:
    # No version flag nor variable in v1.9.3's main: the binary's build info names its main
    # package and the module it came from, at its version.
    out = output("go", "version", "-m", tool("training-operator"))
    path = "\tpath\tgithub.com/kubeflow/training-operator/cmd/training-operator.v1"
    assert path in out, out[:2000]
    mod = f"\tmod\tgithub.com/kubeflow/training-operator\t{PINS['TRAINING_OPERATOR_VERSION']}\t"
    assert mod in out, out[:2000]


def test_mpi_operator_is_built_from_its_pinned_module() -> None:
    # Its --version prints the version ldflags name (the Makefile's); its build info the module.
    out = output(tool("mpi-operator"), "--version")
    assert f"Version: {PINS['MPI_OPERATOR_VERSION']}" in out.splitlines(), out[:2000]
    info = output("go", "version", "-m", tool("mpi-operator"))
    assert "\tpath\tgithub.com/kubeflow/mpi-operator/cmd/mpi-operator" in info, info[:2000]
    mod = f"\tmod\tgithub.com/kubeflow/mpi-operator\t{PINS['MPI_OPERATOR_VERSION']}\t"
    assert mod in info, info[:2000]


def test_trainer_is_built_from_its_pinned_module() -> None:
    # No --version flag and no version logged by v2.2.1's manager: the binary's build info names
    # the main package and the module it was built from, at its version.
    out = output("go", "version", "-m", tool("trainer"))
    path = "\tpath\tgithub.com/kubeflow/trainer/v2/cmd/trainer-controller-manager\n"
    assert path in out, out[:2000]
    mod = f"\tmod\tgithub.com/kubeflow/trainer/v2\t{PINS['TRAINER_VERSION']}\t"
    assert mod in out, out[:2000]


def test_kubernetes_provider_plugin_is_installed_at_its_pin(tmp_path: Path) -> None:
    env = {**os.environ, "GPU_QUEUES_PULUMI_DIR": str(tmp_path)}
    out = subprocess.run(
        [str(RUN), "pulumi", "plugin", "ls"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    ).stdout
    assert re.search(
        rf"kubernetes\s+resource\s+{re.escape(PINS['PULUMI_KUBERNETES_VERSION'])}", out
    ), out


def _preview(program: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`pulumi preview --policy-pack policies` of a test program, rendering YAML (no cluster)."""
    return Program(
        program, tmp_path, POLICY_PROGRAM_RENDER_DIR=str(tmp_path / "rendered")
    ).with_policy_pack("preview")


def test_cli_runs_a_program_with_the_policy_pack_and_passes(tmp_path: Path) -> None:
    done = _preview("passing", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Policies:" in done.stdout and "gpu-queues" in done.stdout, done.stdout


def test_cli_refuses_a_gpu_only_cluster_queue(tmp_path: Path) -> None:
    done = _preview("gpu-only-clusterqueue", tmp_path)
    assert done.returncode != 0, done.stdout
    assert "clusterqueue-covers-cpu-memory" in done.stdout, done.stdout
    assert 'ClusterQueue "gpu-only-cluster-queue"' in done.stdout, done.stdout
    assert "mandatory" in done.stdout


def test_cli_refuses_a_local_queue_pointing_at_a_missing_cluster_queue(tmp_path: Path) -> None:
    done = _preview("missing-clusterqueue", tmp_path)
    assert done.returncode != 0, done.stdout
    assert "localqueue-clusterqueue-exists" in done.stdout, done.stdout
    assert "no-such-cluster-queue" in done.stdout, done.stdout


def test_cli_runs_the_project_and_bad_config_stops_it_before_any_resource(tmp_path: Path) -> None:
    """The project's own program under the real CLI: every config problem listed at once,
    a non-zero exit, and no resource but the stack itself registered."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py", "gpu_queues", "components", "toolchain", ".venv"):
        (project / name).symlink_to(ROOT / name)
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    bad = dev.replace("nominalQuota: 8}", "nominalQuota: -8}").replace("claimName:", "claimNmae:")
    assert bad != dev
    (project / "Pulumi.bad.yaml").write_text(bad)
    env = {**os.environ, "GPU_QUEUES_PULUMI_DIR": str(tmp_path / "pulumi")}

    def pulumi(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(RUN), "pulumi", "--non-interactive", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    pulumi("stack", "init", "bad").check_returncode()
    done = pulumi("preview", "-s", "bad")
    assert done.returncode != 0, done.stdout
    assert "invalid stack config (3 problem(s))" in done.stdout, done.stdout
    assert "nominalQuota: must not be negative, got -8" in done.stdout
    assert "unknown key 'claimNmae' (did you mean 'claimName'?)" in done.stdout
    assert "+ 1 to create" in done.stdout  # the stack resource only
    assert "kubernetes:" not in done.stdout
