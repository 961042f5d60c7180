"""gpu-queues as a library (issue 22, item 2), on the sandbox: a Pulumi program of someone
else's, in a directory outside the repo with a virtualenv of its own into which this package is
installed with its own dependencies, deployed by the real Pulumi CLI; its queues admit the
guide's GPU job. The program is docs/examples/library/__main__.py, the one the README shows.

Kueue is the sandbox's, installed by the local stack's `pulumi up` (the `cluster` fixture): the
program sets kueue.install false and only waits for it. The virtualenv installs from the wheels
`make wheels` downloaded (sandbox/wheels.py): this runs inside the sandbox's namespace, which
reaches no package index.
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

from gpu_queues.pins import kueue_version
from gpu_queues.tools import pulumi_cli
from sandbox import wheels
from sandbox.paths import ROOT
from sandbox.walkthrough import KubeSession, job
from tests.e2e.programs import admitted, deploy, run, tear_down

pytestmark = pytest.mark.e2e

EXAMPLE = ROOT / "docs" / "examples" / "library" / "__main__.py"
PROJECT = "my-gpu-platform"
STACK = "library"
PULUMI_YAML = f"""\
name: {PROJECT}
description: a program of its own that uses gpu-queues' components
runtime:
  name: python
  options:
    toolchain: pip
    virtualenv: venv
"""
TEAMS = {"vision": "team-vision", "speech": "team-speech"}


@dataclass
class Program:
    dir: Path
    python: Path
    up: subprocess.CompletedProcess[str]

    def pulumi(self, *args: str, stdin: str | None = None, check: bool = True) -> Any:
        cmd = pulumi_cli.argv(args, stack=STACK)
        return run(cmd, self.dir, stdin, check)


@pytest.fixture(scope="module")
def program(cluster: KubeSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Program]:
    if not wheels.current():
        pytest.fail(f"{wheels.WHEELS} is missing or stale: run `make wheels` on the host first")
    here = tmp_path_factory.mktemp(PROJECT)
    assert ROOT not in here.parents, here
    (here / "Pulumi.yaml").write_text(PULUMI_YAML)
    shutil.copyfile(EXAMPLE, here / "__main__.py")
    # (Running the install beside the local stack's deploy, in the `cluster` fixture, was
    # tried: on two busy cores both got slower, and the whole no faster.)
    started = time.monotonic()
    run([sys.executable, "-m", "venv", str(here / "venv")], here)
    python = here / "venv" / "bin" / "python"
    run(wheels.install_command(python), here)
    installed = time.monotonic()
    made = Program(here, python, subprocess.CompletedProcess([], 0))
    made.up = deploy(made.pulumi)
    print(
        f"library program: virtualenv and install {installed - started:.0f}s, "
        f"pulumi up {time.monotonic() - installed:.0f}s"
    )
    yield made
    tear_down(made.pulumi, cluster, TEAMS)


def test_the_package_installs_into_a_virtualenv_of_its_own(program: Program) -> None:
    code = "import gpu_queues, gpu_queues.pins as p; print(gpu_queues.__file__, p.kueue_version())"
    where, version = run([str(program.python), "-c", code], program.dir).stdout.split()
    site = program.dir / "venv" / "lib"
    assert site in Path(where).parents, where
    assert version == kueue_version()  # the pin the build copied from toolchain/pins.env
    run([str(program.python), "-m", "pip", "check"], program.dir)


def test_pulumi_up_deploys_the_program_on_its_own_provider_without_installing_kueue(
    program: Program,
) -> None:
    assert program.up.returncode == 0, program.up.stdout + program.up.stderr
    outputs = json.loads(program.pulumi("stack", "output", "--json").stdout)
    assert outputs["localQueues"] == {t: f"{ns}/{t}-queue" for t, ns in TEAMS.items()}
    state = json.loads(program.pulumi("stack", "export").stdout)
    resources = state["deployment"]["resources"]
    providers = [r for r in resources if r["type"] == "pulumi:providers:kubernetes"]
    assert [p["urn"].rsplit("::", 1)[1] for p in providers] == ["my-cluster"]
    objects = [r for r in resources if r["type"].startswith("kubernetes:")]
    assert {r["type"].rsplit(":", 1)[1] for r in objects} >= {
        "Namespace",
        "ResourceFlavor",
        "ClusterQueue",
        "LocalQueue",
    }
    assert all(r["provider"].startswith(providers[0]["urn"] + "::") for r in objects)
    assert not [r for r in resources if r["type"] == "gpu-queues:kueue:KueueRelease"]


def test_the_teams_queues_admit_a_gpu_job(program: Program, cluster: KubeSession) -> None:
    assert program.up.returncode == 0, program.up.stdout + program.up.stderr
    k, ns = cluster, TEAMS["vision"]
    k.submit(job("vision-train", namespace=ns, queue="vision-queue", gpus=4, claim=None))
    admitted(k, "vision-train", ns, "vision-cq")
    k.wait(
        "vision-train's pod Running",
        lambda: any(p.status.phase == "Running" for p in k.job_pods("vision-train", ns)),
        namespace=ns,
    )
