"""gpu-queues from another language (issue 43, item 4), on the sandbox: a Pulumi YAML program
in a directory outside the repo adds the component package with `pulumi package add
<checkout>/package` and deploys two teams' queues through it with the real CLI, pulumi-yaml's
language host built from its pin and our Python language host running the package's provider.
The guide's 6-GPU job is admitted to one team's queue and the second one is held with Kueue's
own message. The program is docs/examples/yaml/Pulumi.yaml, the one docs/library.md shows.
Then a Python program deploys two more teams through the package's generated Python SDK
(docs/examples/python-sdk/__main__.py), as a program in any language with an SDK does.

Kueue is the sandbox's, installed by the local stack's `pulumi up` (the `cluster` fixture): the
program sets kueue.install false and only waits for it. Pulumi makes the package's virtualenv
(package/venv) on its first use with pip, from the wheels `make wheels` downloaded; the test
removes it first, so the package is installed from this checkout as a new consumer's is.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.tools import pulumi_cli
from sandbox import wheels
from sandbox.paths import ROOT
from sandbox.walkthrough import KubeSession, condition, job
from tests.e2e.programs import admitted, deploy, run, tear_down
from tests.toolchain.test_component_sdk import generate_python_sdk

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "docs" / "examples" / "yaml" / "Pulumi.yaml"
PACKAGE = ROOT / "package"
STACK = "yaml"
TEAMS = {"vision": "yaml-vision", "speech": "yaml-speech"}
HELD = (
    "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu "
    "in flavor yaml-gpu, 4 more needed"
)


@dataclass
class Program:
    dir: Path
    added: subprocess.CompletedProcess[str]
    up: subprocess.CompletedProcess[str]

    def pulumi(self, *args: str, stdin: str | None = None, check: bool = True) -> Any:
        return run(pulumi_cli.argv(args, stack=STACK), self.dir, stdin, check)


@pytest.fixture(scope="module")
def program(cluster: KubeSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Program]:
    if not wheels.current():
        pytest.fail(f"{wheels.WHEELS} is missing or stale: run `make wheels` on the host first")
    here = tmp_path_factory.mktemp("yaml-gpu-platform")
    assert ROOT not in here.parents, here
    shutil.copyfile(EXAMPLE, here / "Pulumi.yaml")
    shutil.rmtree(PACKAGE / "venv", ignore_errors=True)
    _forget_cached_schemas()
    started = time.monotonic()
    added = run(pulumi_cli.argv(["package", "add", str(PACKAGE)]), here, check=False)
    made = Program(here, added, subprocess.CompletedProcess([], 1))
    assert added.returncode == 0, added.stdout + added.stderr
    installed = time.monotonic()
    made.up = deploy(made.pulumi)
    print(
        f"YAML program: package add (the package's virtualenv) {installed - started:.0f}s, "
        f"pulumi up {time.monotonic() - installed:.0f}s"
    )
    yield made
    tear_down(made.pulumi, cluster, TEAMS)
    _forget_cached_schemas()


def _forget_cached_schemas() -> None:
    """pulumi-yaml's host caches the package's schema beside the package folder, in the
    checkout (schema-gpu-queues-0.1.0-.json, gitignored), and serves it while the folder is
    older than the cache: each run starts from the schema the provider serves now."""
    for cached in ROOT.glob("schema-gpu-queues*.json"):
        cached.unlink()


def test_package_add_writes_the_package_into_the_program(program: Program) -> None:
    assert program.added.returncode == 0, program.added.stdout + program.added.stderr
    project = yaml.safe_load((program.dir / "Pulumi.yaml").read_text())
    assert project["packages"] == {"gpu-queues": str(PACKAGE)}
    # Installed from this checkout into the package's own virtualenv, at the locked versions.
    python = PACKAGE / "venv" / "bin" / "python"
    code = "import gpu_queues; print(gpu_queues.__file__)"
    where = Path(run([str(python), "-c", code], PACKAGE).stdout.strip())
    assert PACKAGE / "venv" in where.parents, where


def test_pulumi_up_deploys_both_teams_through_the_component(program: Program) -> None:
    assert program.up.returncode == 0, program.up.stdout + program.up.stderr
    outputs = json.loads(program.pulumi("stack", "output", "--json").stdout)
    assert outputs["localQueues"] == {t: f"{ns}/{t}-queue" for t, ns in TEAMS.items()}
    assert outputs["clusterQueues"] == {t: f"{t}-cq" for t in TEAMS}
    resources = json.loads(program.pulumi("stack", "export").stdout)["deployment"]["resources"]
    types = {r["type"] for r in resources}
    assert "gpu-queues:index:GpuQueues" in types
    assert {"ResourceFlavor", "ClusterQueue", "LocalQueue", "Namespace"} <= {
        t.rsplit(":", 1)[1] for t in types if t.startswith("kubernetes:")
    }
    assert "gpu-queues:kueue:KueueRelease" not in types  # kueue.install: false


def test_the_guide_job_is_admitted_and_the_second_held_with_kueues_message(
    program: Program, cluster: KubeSession
) -> None:
    assert program.up.returncode == 0, program.up.stdout + program.up.stderr
    k, ns = cluster, TEAMS["vision"]
    k.submit(job("yaml-job-a", namespace=ns, queue="vision-queue", claim=None))
    admitted(k, "yaml-job-a", ns, "vision-cq")
    k.submit(job("yaml-job-b", namespace=ns, queue="vision-queue", claim=None))
    held = k.wait(
        "yaml-job-b evaluated",
        lambda: condition(k.workload_for("yaml-job-b", ns), "QuotaReserved"),
        namespace=ns,
    )
    assert (held["status"], held["reason"], held["message"]) == ("False", "Pending", HELD)
    assert k.get_job("yaml-job-b", ns).spec.suspend is True


SDK_EXAMPLE = ROOT / "docs" / "examples" / "python-sdk" / "__main__.py"
SDK_TEAMS = {"nlp": ("sdk-nlp", 8), "robotics": ("sdk-robotics", 4)}


def test_a_python_program_deploys_through_the_generated_sdk(
    program: Program, cluster: KubeSession, tmp_path: Path
) -> None:
    """The package's Python SDK, generated by the CLI, installed into the program's own
    virtualenv beside the pinned Pulumi SDK; the program's snake_case keys reach the provider
    as the schema's, and the ClusterQueues say the quotas the program wrote."""
    assert program.added.returncode == 0  # the package's virtualenv is made
    sdk = generate_python_sdk(tmp_path)
    here = tmp_path / "sdk-program"
    here.mkdir()
    shutil.copyfile(SDK_EXAMPLE, here / "__main__.py")
    (here / "Pulumi.yaml").write_text(
        "name: sdk-gpu-platform\nruntime:\n  name: python\n  options:\n    toolchain: pip\n"
        f"    virtualenv: venv\npackages:\n  gpu-queues: {PACKAGE}\n"
    )
    run([sys.executable, "-m", "venv", str(here / "venv")], here)
    python = here / "venv" / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--no-index", "--find-links"]
    run([*pip, str(wheels.WHEELS), "-c", str(ROOT / "requirements.lock"), "pulumi", "wheel"], here)
    run([*pip, str(wheels.WHEELS), "--no-build-isolation", "--no-deps", str(sdk)], here)

    def pulumi(*args: str, stdin: str | None = None, check: bool = True) -> Any:
        return run(pulumi_cli.argv(args, stack="sdk"), here, stdin, check)

    up = deploy(pulumi)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        outputs = json.loads(pulumi("stack", "output", "--json").stdout)
        assert outputs["localQueues"] == {t: f"{ns}/{t}-queue" for t, (ns, _) in SDK_TEAMS.items()}
        for name, (_, gpus) in SDK_TEAMS.items():
            cq = cluster.custom.get_cluster_custom_object(
                "kueue.x-k8s.io", "v1beta2", "clusterqueues", f"{name}-cq"
            )
            (flavor,) = cq["spec"]["resourceGroups"][0]["flavors"]
            quotas = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
            assert (flavor["name"], quotas["nvidia.com/gpu"]) == ("sdk-gpu", str(gpus)), cq
    finally:
        tear_down(pulumi, cluster, {t: ns for t, (ns, _) in SDK_TEAMS.items()})
