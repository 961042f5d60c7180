"""`make rehearse` end to end, from the host: each test starts a fresh sandbox shaped like a
stack (the committed staging and prod, stack files nobody wrote before, a broken one),
deploys that stack's own file there with the real CLI and its deploy's policy config, and
reads the table the rehearsal prints. Minutes each: `make test` runs them after e2e."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_queues.config.model import StackConfig
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.quantity import format_quantity
from gpu_queues.kueue.versions import supported
from gpu_queues.pins import read_pins
from sandbox import shape as fake_cluster
from sandbox.rehearse import plan as rp
from tests.rehearse.stackgen import Names, rehearsal_stack, write_stack

pytestmark = pytest.mark.rehearse

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]
KUBECTL = str(ROOT / ".toolchain" / "bin" / "kubectl")
BROKEN = ROOT / "tests" / "rehearse" / "stacks" / "Pulumi.broken.yaml"
TAS_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-tas.yaml"
TIMEOUT = 1800
PINNED = read_pins()["KUEUE_VERSION"]
# A supported release other than the pin: a stack may set its own kueue.version (a canary
# ahead of the pin), and after `make pin-kueue` the pin itself is the new release.
OTHER = next(v for v in reversed(supported()) if v != PINNED)


def rehearse(stack: str, stack_file: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--stack-file", str(stack_file)] if stack_file else []
    return subprocess.run(
        [sys.executable, "-m", "sandbox.rehearse.run", stack, *extra, "--down"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def table(stdout: str) -> dict[str, dict[str, str]]:
    """The rehearsal's table: team -> column -> cell."""
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    assert lines, stdout
    head = [c.strip() for c in lines[0].strip("|").split(" | ")]
    rows = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(head), line
        rows[cells[0]] = dict(zip(head, cells, strict=True))
    return rows


def assert_every_row_passes(done: subprocess.CompletedProcess[str], cfg: StackConfig) -> None:
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    rows = table(done.stdout)
    assert sorted(rows) == sorted(t.name for t in cfg.teams), out
    for p in rp.plan(cfg):
        row = rows[p.team.name]
        assert row["result"] == "pass", row
        assert row["ClusterQueue"] == p.team.cluster_queue
        # Kueue named, for every flavor, exactly the ceiling the config gives.
        held = row["job held + message"]
        for flavor, ceiling in p.held.ceilings.items():
            assert (
                f"insufficient quota for {p.held.group.key} in flavor {flavor}, previously "
                "considered podsets requests (0) + current podset request"
            ) in held, held
            assert f"> maximum capacity ({format_quantity(ceiling)})" in held, held
        admitted = row["job admitted"]
        for job in p.fits:
            for flavor in set(job.flavors.values()):
                assert f"admitted to {flavor}" in admitted or f", {flavor}" in admitted, admitted
        # ...and the first of them through each other LocalQueue, in its namespace.
        for queue, namespace in p.other_queues:
            assert f"through LocalQueue {namespace}/{queue}: " in admitted, admitted
        assert admitted.count("Running on") == len(p.fits) + len(p.other_queues), admitted
        if p.too_big is not None and p.too_big.topology is not None:
            # Kueue places before it admits on a TAS flavor: held, never admitted.
            assert (
                f"held by topology {p.too_big.topology} (a node holds "
                f"{format_quantity(p.too_big.largest_node)}): couldn't assign "
                f'flavors to pod set main: topology "{p.too_big.topology}" doesn\'t allow to fit '
                "any of 1 pod(s)"
            ) in row["one pod > a node"], row
        elif p.too_big is not None:
            assert "unschedulable" in row["one pod > a node"], row
            assert (
                f"Insufficient {p.too_big.shape.requests and next(iter(p.too_big.shape.requests))}"
                in (row["one pod > a node"])
            )
        else:
            assert row["one pod > a node"] == "-"
        if p.team.submitters:
            namespaces = ", ".join(p.team.all_namespaces)
            assert f"create Jobs in {namespaces} yes" in row["RBAC"], row
        else:
            assert row["RBAC"] == "no submitters: nothing to check"
    assert "pulumi preview --expect-no-changes: no changes" in done.stdout, out


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_committed_stack_rehearses(stack: str) -> None:
    done = rehearse(stack)
    cfg = fake_cluster.load_stack(ROOT / f"Pulumi.{stack}.yaml")
    assert_every_row_passes(done, cfg)
    # Deployed with the pack config of its deploy job.
    assert f"policies/config/prod.json (job {stack} of .github/workflows/deploy.yml)" in done.stderr
    assert f"on the sandbox, Kueue {cfg.kueue.version}: controller image " in done.stdout
    rows = table(done.stdout)
    for team in cfg.teams:  # each team's every flavor ran a job on its nodes
        assert "admitted to h100, Running on h100-" in rows[team.name]["job admitted"]
        assert "admitted to a100, Running on a100-" in rows[team.name]["job admitted"]
    if stack == "staging":  # research's second namespace, through its own LocalQueue
        assert (
            "through LocalQueue team-research-eval/eval-queue: " in rows["research"]["job admitted"]
        )
        assert "create Jobs in team-research, team-research-eval yes" in rows["research"]["RBAC"]


@pytest.mark.parametrize(("seed", "cohort", "version"), [(11, True, None), (12, False, OTHER)])
def test_a_stack_file_nobody_wrote_before_rehearses(
    tmp_path: Path, seed: int, cohort: bool, version: str | None
) -> None:
    stack = Names(random.Random(seed))("s")
    raw = rehearsal_stack(seed, cohort)
    if version is not None:
        raw["kueue"] = {"version": version}
    path = write_stack(raw, tmp_path, stack)
    done = rehearse(stack, path)
    assert_every_row_passes(done, fake_cluster.load_stack(path))
    assert "kueue.manifest https://github.com/kubernetes-sigs/kueue/releases" in done.stderr
    assert "does not deploy it; the preview rule" in done.stderr
    # The rehearsal ran on the stack's own release: its controller image and its binary.
    runs = version or PINNED
    assert (
        f"on the sandbox, Kueue {runs}: controller image registry.k8s.io/kueue/kueue:{runs}, "
        f"played by .toolchain/bin/kueue-{runs}:"
    ) in done.stdout, done.stdout + done.stderr


def test_a_topology_aware_stack_rehearses_on_nodes_labelled_by_domain(tmp_path: Path) -> None:
    """The e2e TAS stack (tests/e2e/stacks/Pulumi.local-tas.yaml) with Kueue installed by the
    stack itself, on a sandbox shaped like it: 8 nodes in 2 blocks of 2 racks."""
    raw = parse_config(TAS_STACK.read_text(), TAS_STACK.name)
    del raw["kueue"]["install"]
    path = write_stack(raw, tmp_path, "tas")
    done = rehearse("tas", path)
    cfg = fake_cluster.load_stack(path)
    assert_every_row_passes(done, cfg)
    row = table(done.stdout)["tas"]
    # 8 pods of 4 GPUs fill the flavor: Kueue placed one per node, every node of the 2 blocks.
    assert "admitted to tas-gpu, Running on 8 nodes: tas-gpu-0, " in row["job admitted"], row


def sandbox(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*SANDBOX, *args], cwd=ROOT, capture_output=True, text=True, timeout=TIMEOUT
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_broken_stack_fails_with_the_row_and_what_the_cluster_said() -> None:
    sandbox("down")
    try:
        sandbox("up", "broken", str(BROKEN))
        # A cluster admin once granted the platform group `edit` everywhere.
        sandbox(
            "exec",
            KUBECTL,
            "create",
            "clusterrolebinding",
            "platform-engineers-edit",
            "--clusterrole=edit",
            "--group=platform-engineers",
        )
        done = sandbox(
            "exec",
            sys.executable,
            "-m",
            "sandbox.rehearse.run",
            "run",
            "broken",
            "--stack-file",
            str(BROKEN),
            check=False,
        )
    finally:
        sandbox("down")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    rows = table(done.stdout)
    assert {team: row["result"] for team, row in rows.items()} == {
        "tainted": "FAIL",
        "no-gpus": "FAIL",
        "platform": "FAIL",
        "steady": "pass",
    }, out
    # Kueue refuses the flavor: its nodes' taint is not tolerated.
    assert (
        "FAIL team tainted, job admitted: Job team-tainted/rehearse-fits-0 (1 pod x (cpu 32, "
        "memory 128Gi, nvidia.com/gpu 4)) to be admitted: the cluster says no"
    ) in out
    tainted = out.split("FAIL team tainted, job admitted:")[1].splitlines()[0]
    assert (
        "QuotaReserved=False Pending: couldn't assign flavors to pod set main: untolerated taint "
        "{nvidia.com/gpu present NoSchedule <nil>} in flavor tainted-gpu"
    ) in tainted
    # Kueue admits GPU quota no node has; the scheduler says so.
    assert (
        "FAIL team no-gpus, job admitted: all 1 pod(s) of Job team-no-gpus/rehearse-fits-0 "
        "Running: the cluster says no"
    ) in out
    assert rows["no-gpus"]["job admitted"].startswith("FAIL")
    assert "Insufficient nvidia.com/gpu" in out.split("FAIL team no-gpus, job admitted:")[1]
    # The authorizer's answer for the group, in another team's namespace and on queues.
    rbac = out.split("FAIL team platform, RBAC:")[1].splitlines()[0]
    assert "Group platform-engineers may create jobs.batch in team-steady" in rbac
    assert "Group platform-engineers may create jobs.batch in team-platform" not in rbac
    assert rows["platform"]["job admitted"].startswith("1 pod x")
    assert "rehearsal of broken:" in out and "check(s) failed" in out
