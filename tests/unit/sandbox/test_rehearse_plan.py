"""What a rehearsal asks of each team (sandbox/rehearse/plan.py) and how it reads the answers
(sandbox/rehearse/run.py), without a cluster: Kueue's ceilings from the stack config, job shapes
within quota and nodes, Kueue's held message, the deploy's policy config, the substitutions."""

from __future__ import annotations

import copy
import hashlib
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.kueue.quantity import parse_quantity
from sandbox.rehearse import plan as rp
from sandbox.rehearse.deploy import deploy_policy_config, sandbox_stack_file
from sandbox.rehearse.jobs import job_manifest
from sandbox.rehearse.kube import CheckFailed
from sandbox.rehearse.team_checks import check_held_message
from sandbox.shape import load_stack
from tests.builders import Flavor, Stack, Team
from tests.conftest import ROOT, stack_raw, without_tree
from tests.rehearse.stackgen import rehearsal_stack, write_stack

pytestmark = pytest.mark.unit

GPU = "nvidia.com/gpu"
# The generated stacks the rehearsal tests deploy (tests/rehearse/test_rehearse.py), and more.
REHEARSED = [(11, True), (12, False)]
SEEDS = [*REHEARSED, *((s, s % 2 == 0) for s in range(40))]


def config(stack: str) -> StackConfig:
    return load_config(stack_raw(stack))


def gpu_ceilings(cfg: StackConfig) -> dict[str, dict[str, int]]:
    return {
        cq: {f: int(v) for (f, r), v in per.items() if r == GPU}
        for cq, per in rp.ceilings(cfg).items()
    }


# --- ceilings: Kueue's potentialAvailable, from the config ---------------------------------


def test_staging_ceilings_follow_the_tree_and_its_limits() -> None:
    # research h100: nominal 4, lending 2 (keeps 2), borrowing 4. Its division stores the 2 it
    # lends; the product division all of vision's and nlp's 1 each (no lending limit): 2; the
    # reserve its 2. The root gpu-pool holds 2 + 2 + 2 = 6. Ceiling: 2 kept + 6 = 8, = 4 + 4.
    # vision h100: keeps nothing, 0 + 6 = 6, capped at 1 + 3 = 4.
    assert gpu_ceilings(config("staging")) == {
        "research-cq": {"h100": 8, "a100": 4},
        "vision-cq": {"h100": 4, "a100": 6},
        "nlp-cq": {"h100": 4, "a100": 4},
    }


def test_prod_ceilings() -> None:
    # h100: research keeps 8 and may use the root's 20 (its 8 lent, the 4 each of vision and
    # nlp lend, the reserve's 4), capped at 16 + 8; vision keeps 2, 2 + 20 capped at 6 + 10.
    assert gpu_ceilings(config("prod")) == {
        "research-cq": {"h100": 24, "a100": 8},
        "vision-cq": {"h100": 16, "a100": 12},
        "nlp-cq": {"h100": 16, "a100": 8},
    }


def _h100_gpu_of_cohort(raw: dict[str, Any], name: str, quota: dict[str, Any]) -> None:
    """Give a cohort of the raw config its own h100 quota (nothing of cpu and memory)."""
    cohort = next(c for c in raw["cohorts"] if c["name"] == name)
    resources = {"cpu": {"nominalQuota": 0}, "memory": {"nominalQuota": 0}, GPU: quota}
    cohort["resourceGroups"] = [
        {
            "coveredResources": ["cpu", "memory", GPU],
            "flavors": [{"name": "h100", "resources": resources}],
        }
    ]


def _no_research_borrowing_limit(raw: dict[str, Any]) -> None:
    raw["teams"][0]["resourceGroups"][0]["flavors"][0]["resources"][GPU].pop("borrowingLimit")


@pytest.mark.parametrize(
    ("edits", "expected"),
    [
        # prod's tree as it is, without research's borrowing limit: what research keeps (8)
        # and everything the root holds (8 from research, 4 + 4 from vision and nlp, the
        # reserve's 4): 28.
        ([_no_research_borrowing_limit], 28),
        # The product division keeps its whole subtree (lendingLimit 0): the root holds
        # research's 8 and the reserve's 4.
        (
            [
                _no_research_borrowing_limit,
                lambda raw: _h100_gpu_of_cohort(
                    raw, "product-division", {"nominalQuota": 0, "lendingLimit": 0}
                ),
            ],
            20,
        ),
        # It lends at most 6 of its subtree's 8: the root holds 8 + 6 + 4.
        (
            [
                _no_research_borrowing_limit,
                lambda raw: _h100_gpu_of_cohort(
                    raw, "product-division", {"nominalQuota": 0, "lendingLimit": 6}
                ),
            ],
            26,
        ),
        # The research division may borrow at most 2 above its subtree's 8 from the root:
        # research keeps 8, its division may use 8 + 2.
        (
            [
                _no_research_borrowing_limit,
                lambda raw: _h100_gpu_of_cohort(
                    raw, "research-division", {"nominalQuota": 0, "borrowingLimit": 2}
                ),
            ],
            18,
        ),
        # Quota of the research division's own is research's to use too (and lent up).
        (
            [
                _no_research_borrowing_limit,
                lambda raw: _h100_gpu_of_cohort(raw, "research-division", {"nominalQuota": 2}),
                lambda raw: _h100_gpu_of_cohort(raw, "reserve", {"nominalQuota": 2}),
            ],
            28,
        ),
        # A reserve that keeps its GPUs (lendingLimit 0) lends nobody anything.
        (
            [
                _no_research_borrowing_limit,
                lambda raw: _h100_gpu_of_cohort(
                    raw, "reserve", {"nominalQuota": 4, "lendingLimit": 0}
                ),
            ],
            24,
        ),
    ],
)
def test_tree_ceiling_cases(edits: list[Any], expected: int) -> None:
    raw = stack_raw("prod")
    for edit in edits:
        edit(raw)
    assert gpu_ceilings(load_config(raw))["research-cq"]["h100"] == expected


def _two_teams(a: dict[str, Any], b: dict[str, Any], cohort: bool) -> StackConfig:
    raw = without_tree(stack_raw("prod"))  # the two teams in one cohort, gpu-pool
    raw["kueue"] = {}
    for team, quota in zip(raw["teams"][:2], (a, b), strict=True):
        h100 = team["resourceGroups"][0]["flavors"][0]["resources"]
        h100[GPU] = quota
        if not cohort:
            team.pop("cohort")
            team.pop("preemption")
            for flavor in team["resourceGroups"][0]["flavors"]:
                for q in flavor["resources"].values():
                    q.pop("borrowingLimit", None)
                    q.pop("lendingLimit", None)
    raw["teams"] = raw["teams"][:2]
    kept = {t["namespace"] for t in raw["teams"]}
    raw["sharedStorage"] = [v for v in raw["sharedStorage"] if v["namespace"] in kept]
    if not cohort:
        raw.pop("cohort")
    return load_config(raw)


@pytest.mark.parametrize(
    ("a", "b", "cohort", "expected"),
    [
        # Without a cohort a queue may use its nominal quota, nothing more.
        ({"nominalQuota": 10}, {"nominalQuota": 6}, False, 10),
        # In a cohort without limits: everything the cohort holds.
        ({"nominalQuota": 10}, {"nominalQuota": 6}, True, 16),
        # A borrowing limit caps it at nominal + limit.
        ({"nominalQuota": 10, "borrowingLimit": 2}, {"nominalQuota": 6}, True, 12),
        # What the other team keeps (nominal above its lending limit) is not lent.
        ({"nominalQuota": 10}, {"nominalQuota": 6, "lendingLimit": 1}, True, 11),
        # What this team keeps still counts for itself.
        ({"nominalQuota": 10, "lendingLimit": 0}, {"nominalQuota": 6}, True, 16),
    ],
)
def test_ceiling_cases(a: dict[str, Any], b: dict[str, Any], cohort: bool, expected: int) -> None:
    assert gpu_ceilings(_two_teams(a, b, cohort))["research-cq"]["h100"] == expected


# --- job shapes ---------------------------------------------------------------------------


def node_sizes(cfg: StackConfig, flavor: str) -> dict[str, Fraction]:
    nodes = next(f for f in cfg.flavors if f.name == flavor).node_list()
    return {r: parse_quantity(v) for r, v in nodes[0].resources.items()} if nodes else {}


@pytest.mark.parametrize(("seed", "cohort"), SEEDS)
def test_generated_stacks_are_valid_and_their_jobs_fit_quota_and_nodes(
    seed: int, cohort: bool
) -> None:
    cfg = load_config(rehearsal_stack(seed, cohort))
    flavors = {f.name: f for f in cfg.flavors}
    for p in rp.plan(cfg):
        for job in p.fits:
            totals = job.shape.totals()
            for g in p.groups:
                if g.index not in job.targets:
                    continue
                target = job.targets[g.index]
                for r in g.covered:
                    # Within the nominal quota of the flavor it was sized from...
                    assert totals.get(r, 0) <= p.quotas[target, r].nominal, (seed, p.team.name)
                # ...and admitted to a flavor where it fits what the team may use.
                assigned = job.flavors[g.index]
                assert all(totals[r] <= p.ceilings[assigned, r] for r in totals if r in g.covered)
            # Each pod fits one node it may land on that has the GPUs it asks for.
            extended = [r for r in job.shape.requests if rp.is_extended(r)]
            landing = rp.landing_nodes(flavors, job.flavors.values(), job.selector)
            nodes = [n for n in landing if all(n.get(r, 0) > 0 for r in extended)] or landing
            for r, amount in job.shape.requests.items():
                sizes = [n[r] for n in nodes if n.get(r, 0) > 0]
                limit = min(sizes) if rp.is_extended(r) else min(sizes) / 2
                assert amount <= limit, (seed, p.team.name, r)
        held = p.held
        assert all(held.request > c for c in held.ceilings.values())
        assert held.excess == held.request - max(held.ceilings.values()) > 0
        if p.too_big is not None:
            key = next(iter(p.too_big.shape.requests))
            assert p.too_big.shape.requests[key] > p.too_big.largest_node


def test_the_generated_stacks_cover_what_stack_files_can_say() -> None:
    """Across the rehearsed seeds: teams without GPUs, split groups, several flavors per
    group, flavors without labels, totals-only flavors, no submitters, a cohort and none,
    borrowing limits, a pod bigger than a node."""
    seen: set[str] = set()
    for seed, cohort in REHEARSED:
        raw = rehearsal_stack(seed, cohort)
        cfg = load_config(raw)
        seen.add("cohort" if cfg.cohort else "no cohort")
        for f in cfg.flavors:
            seen.add("labelled" if f.node_labels else "unlabelled")
        for t in cfg.teams:
            covered = [r for g in t.resource_groups for r in g.covered_resources]
            seen.add("gpu" if any(rp.is_extended(r) for r in covered) else "cpu only")
            if len(t.resource_groups) > 1:
                seen.add("split groups")
            if any(len(g.flavors) > 1 for g in t.resource_groups):
                seen.add("several flavors")
            seen.add("submitters" if t.submitters else "no submitters")
            quotas = [q for g in t.resource_groups for f in g.flavors for q in f.resources.values()]
            if any(q.borrowing_limit is not None for q in quotas):
                seen.add("borrowing limit")
        if any(p.too_big for p in rp.plan(cfg)):
            seen.add("one pod > a node")
    assert seen >= {
        "cohort",
        "no cohort",
        "labelled",
        "unlabelled",
        "gpu",
        "cpu only",
        "split groups",
        "several flavors",
        "submitters",
        "no submitters",
        "borrowing limit",
        "one pod > a node",
    }


def test_a_team_with_two_namespaces_sends_a_job_through_each_queue() -> None:
    research, vision, _ = rp.plan(config("staging"))
    assert research.other_queues == [("eval-queue", "team-research-eval")]
    assert research.other_namespaces == ["team-nlp", "team-vision"]
    # Another team's submitters may create Jobs in neither of research's namespaces.
    assert vision.other_namespaces == ["team-nlp", "team-research", "team-research-eval"]
    assert vision.other_queues == []
    job = job_manifest(
        "j", research.team, research.fits[0].shape, "shared-pvc", None, research.other_queues[0]
    )
    assert job["metadata"]["namespace"] == "team-research-eval"
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "eval-queue"}
    default = job_manifest("j", research.team, research.fits[0].shape)
    assert default["metadata"]["namespace"] == "team-research"
    assert default["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "gpu-queue"}


def test_prod_research_spans_two_nodes_and_shows_the_one_pod_trap() -> None:
    research = rp.plan(config("prod"))[0]
    first = research.fits[0]
    assert first.shape.pods == 2 and first.shape.requests[GPU] == 8
    assert first.flavors == {0: "h100"}
    # The other flavor gets a job of its own, sent there by its node labels.
    a100 = research.fits[1]
    assert a100.flavors == {0: "a100"}
    assert a100.selector == {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    assert research.too_big is not None
    assert research.too_big.shape.requests == {GPU: 16} and research.too_big.flavor == "h100"


def test_a_flavor_without_gpus_still_gets_a_job_sized_for_its_nodes() -> None:
    cfg = load_stack(ROOT / "tests" / "rehearse" / "stacks" / "Pulumi.broken.yaml")
    no_gpus = next(p for p in rp.plan(cfg) if p.team.name == "no-gpus")
    job = no_gpus.fits[0].shape
    # The GPU quota is asked for although no node has GPUs: the scheduler must refuse it.
    assert job.requests[GPU] == 2
    assert job.requests["cpu"] == 32  # half a 64-cpu node


def test_the_job_manifest_asks_for_extended_resources_as_limits_too() -> None:
    team = config("prod").teams[0]
    shape = rp.JobShape(2, {GPU: Fraction(8), "cpu": Fraction(3, 2), "memory": Fraction(2**30)})
    job = job_manifest("j", team, shape, "shared-pvc", {"a": "b"})
    spec = job["spec"]["template"]["spec"]
    resources = spec["containers"][0]["resources"]
    assert resources == {
        "requests": {GPU: "8", "cpu": "1500m", "memory": "1Gi"},
        "limits": {GPU: "8"},
    }
    assert job["spec"]["parallelism"] == job["spec"]["completions"] == 2
    assert job["spec"]["suspend"] is True
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "gpu-queue"}
    assert spec["nodeSelector"] == {"a": "b"}
    assert spec["volumes"][0]["persistentVolumeClaim"]["claimName"] == "shared-pvc"


# --- reading Kueue's answer -----------------------------------------------------------------

# What Kueue v0.18.3 said for staging's research team (a real run of `make rehearse`), when
# staging was one cohort, gpu-pool: research keeps 2 H100s and 1 A100, the cohort held the
# 4 H100s and 3 A100s the three teams lent. The same stack with its tree folded into gpu-pool
# gives research the same ceilings (vision and nlp lend their one H100 each, as before).
KUEUE_SAID = (
    "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
    "a100, previously considered podsets requests (0) + current podset request (7) > maximum "
    "capacity (4), insufficient quota for nvidia.com/gpu in flavor h100, previously "
    "considered podsets requests (0) + current podset request (7) > maximum capacity (6)"
)


# What Kueue v0.18.3 said for staging's research team once staging was a cohort tree (a real
# run of `make rehearse STACK=staging`, 5 December 2026): the ceilings the tree gives.
KUEUE_SAID_OF_THE_TREE = (
    "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor "
    "a100, previously considered podsets requests (0) + current podset request (10) > maximum "
    "capacity (4), insufficient quota for nvidia.com/gpu in flavor h100, previously "
    "considered podsets requests (0) + current podset request (10) > maximum capacity (8)"
)


def test_kueues_held_message_on_the_tree_matches_the_tree_ceilings() -> None:
    held = rp.plan(config("staging"))[0].held
    assert held.ceilings == {"h100": 8, "a100": 4}
    assert held.request == 10 and held.excess == 2
    check_held_message(KUEUE_SAID_OF_THE_TREE, held)
    # The flat cohort's ceiling (6) is not what Kueue says of the tree.
    with pytest.raises(CheckFailed, match="the stack config gives 6"):
        check_held_message(KUEUE_SAID_OF_THE_TREE, staging_research_held())


def staging_research_held() -> rp.HeldJob:
    return rp.plan(load_config(without_tree(stack_raw("staging"))))[0].held


def test_kueues_held_message_matches_the_ceilings_computed_from_the_config() -> None:
    held = staging_research_held()
    assert held.request == 7 and held.excess == 1
    check_held_message(KUEUE_SAID, held)


@pytest.mark.parametrize(
    ("said", "complaint"),
    [
        (KUEUE_SAID.replace("capacity (6)", "capacity (8)"), "the stack config gives 6"),
        (KUEUE_SAID.split(", insufficient quota for nvidia.com/gpu in flavor h100")[0], "h100"),
        (KUEUE_SAID.replace("request (7)", "request (9)"), "is not 7"),
        (
            "couldn't assign flavors to pod set main: untolerated taint "
            "{nvidia.com/gpu: present} in flavor h100",
            "no 'insufficient quota",
        ),
        ("Workload is inadmissible", "expected it to start with"),
    ],
)
def test_a_held_message_that_disagrees_fails_saying_what_kueue_said(
    said: str, complaint: str
) -> None:
    with pytest.raises(CheckFailed) as info:
        check_held_message(said, staging_research_held())
    assert complaint in str(info.value) and said in str(info.value)


# --- what the stack deploys with ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        ("staging", "policies/config/prod.json"),
        ("prod", "policies/config/prod.json"),
        ("dev", "policies/config/dev.json"),
        ("someone-elses", "policies/config/prod.json"),
    ],
)
def test_the_policy_config_is_the_one_the_deploy_uses(stack: str, expected: str) -> None:
    assert deploy_policy_config(stack)[0] == expected


def test_the_deploy_workflow_decides_over_the_preview_rule(tmp_path: Path) -> None:
    workflow = tmp_path / "deploy.yml"
    workflow.write_text(
        yaml.safe_dump({"jobs": {"x": {"with": {"stack": "qa", "policy-config": "p/qa.json"}}}})
    )
    assert deploy_policy_config("qa", workflow) == ("p/qa.json", f"job x of {workflow}")
    assert deploy_policy_config("other", workflow)[0] == "policies/config/prod.json"


def test_only_the_connection_is_substituted_when_the_manifest_is_readable(tmp_path: Path) -> None:
    # prod as committed, its manifest pin pointing at a file that is there (the committed
    # path is rendered only by `make kueue-manifest`, which a unit test cannot count on).
    raw = stack_raw("prod")
    manifest = tmp_path / "manifests.yaml"
    manifest.write_text("kind: List\n")
    raw["kueue"]["manifest"] = {
        "path": str(manifest),
        "sha256": hashlib.sha256(manifest.read_bytes()).hexdigest(),
    }
    source = write_stack(raw, tmp_path, "prod")
    original = yaml.safe_load(source.read_text())["config"]
    out, notes = sandbox_stack_file("prod", source, load_config(raw), tmp_path / "out")
    assert yaml.safe_load(out.read_text())["config"] == original
    assert len(notes) == 1 and "kubeconfig" in notes[0]


def test_an_unreadable_manifest_and_the_connection_are_substituted(tmp_path: Path) -> None:
    raw = stack_raw("prod")
    raw["kubernetes"] = {"context": "prod-cluster"}
    raw["kueue"]["manifest"] = {
        "url": "https://mirror.example.com/kueue/manifests.yaml",
        "sha256": "0" * 64,
    }
    path = write_stack(raw, tmp_path, "prod")
    rendered = tmp_path / "manifests.yaml"
    rendered.write_text("kind: List\n")
    out, notes = sandbox_stack_file("prod", path, load_config(raw), tmp_path / "out", rendered)
    written = yaml.safe_load(out.read_text())["config"]
    assert "gpu-queues:kubernetes" not in written
    manifest = written["gpu-queues:kueue"]["manifest"]
    assert manifest == {
        "path": str(rendered),
        "sha256": hashlib.sha256(rendered.read_bytes()).hexdigest(),
    }
    # Everything else is the stack's own.
    kept = {k: v for k, v in written.items() if k != "gpu-queues:kueue"}
    assert kept == {
        f"gpu-queues:{k}": v for k, v in raw.items() if k not in ("kueue", "kubernetes")
    }
    rest = {k: v for k, v in written["gpu-queues:kueue"].items() if k != "manifest"}
    assert rest == {k: v for k, v in raw["kueue"].items() if k != "manifest"}
    assert any("mirror.example.com" in n for n in notes)


# --- a small stack, its plan worked out by hand --------------------------------------------

GI = 2**30


def _small_team(name: str, cpu: int, memory: str, gpu: int, lend: int | None = None) -> Team:
    team = Team(name).local_queue("q").cohort("pool").quota("big", cpu=cpu, memory=memory, gpu=gpu)
    return team.lending("big", gpu=lend) if lend is not None else team


SMALL = (
    Stack()
    .kueue(install=False)
    .flavor(Flavor("big").labels({"pool": "big"}).nodes(2, cpu=16, memory="64Gi", gpu=4))
    .cohort("pool")
    .team(_small_team("a", 24, "96Gi", 6), _small_team("b", 8, "32Gi", 2, lend=1))
    .raw()
)


def test_a_small_stack_gets_the_plan_worked_out_by_hand() -> None:
    """Two nodes of 16 cpu, 64Gi and 4 GPUs; team a holds 6 GPUs (lends all), 24 cpu and
    96Gi, team b 2 GPUs and lends 1 (keeps 1), 8 cpu and 32Gi. The cohort holds what they
    lend: 6 + 1 = 7 GPUs, 32 cpu, 128Gi."""
    a, b = rp.plan(load_config(copy.deepcopy(SMALL)))
    # Ceilings: a keeps nothing, so 0 + 7; b keeps 1, so 1 + 7. cpu and memory: all lent.
    assert a.ceilings == {("big", "cpu"): 32, ("big", "memory"): 128 * GI, ("big", GPU): 7}
    assert b.ceilings == {("big", "cpu"): 32, ("big", "memory"): 128 * GI, ("big", GPU): 8}
    # a's 6 GPUs take two pods of 3 (a node holds 4); cpu and memory: its quota over the two
    # pods (12 cpu, 48Gi) is more than half a node, so half a node per pod (8 cpu, 32Gi).
    (fits,) = a.fits
    assert (fits.shape.pods, fits.shape.requests) == (2, {"cpu": 8, "memory": 32 * GI, GPU: 3})
    assert fits.shape.describe() == "2 pods x (cpu 8, memory 32Gi, nvidia.com/gpu 3)"
    assert fits.flavors == {0: "big"} and fits.targets == {0: "big"}
    # Held: one GPU more than a may use (7 + 1 = 8), in pods of one node (4 each).
    assert (a.held.shape.pods, a.held.shape.requests) == (2, {GPU: 4})
    assert (a.held.request, a.held.excess, a.held.ceilings) == (8, 1, {"big": 7})
    # Its whole quota (6 GPUs) in one pod: admitted (6 <= 7), larger than any node (4).
    assert a.too_big is not None
    assert (a.too_big.shape.pods, a.too_big.shape.requests) == (1, {GPU: 6})
    assert (a.too_big.flavor, a.too_big.largest_node) == ("big", 4)
    # b: 2 GPUs fit one pod; held at 8 + 1 = 9 GPUs, three pods of 3; no pod larger than a node.
    (fits,) = b.fits
    assert (fits.shape.pods, fits.shape.requests) == (1, {"cpu": 8, "memory": 32 * GI, GPU: 2})
    assert (b.held.shape.pods, b.held.shape.requests) == (3, {GPU: 3})
    assert (b.held.request, b.held.excess) == (9, 1)
    assert b.too_big is None
    assert (a.other_namespaces, b.other_namespaces) == (["team-b"], ["team-a"])
