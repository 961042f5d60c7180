"""The cross-check's generated stacks and mixes: the same for a seed on every run, valid for
the stack check and the mix reader, and varied across seeds in what the engines must get
right (the spread the issue asks of it, counted over the first 60 seeds)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from gpu_queues.kueue.versions import release
from gpu_queues.whatif.mix import Catalog, load_mix
from sandbox.crosscheck.generate import (
    EVERY_KIND_FROM,
    KINDS_FROM,
    OPERATORS_FROM,
    ORG_FROM,
    generate,
)

pytestmark = pytest.mark.unit
SEEDS = range(1, 61)


def test_a_seed_gives_the_same_stack_and_mix_every_time():
    assert generate(7) == generate(7)
    assert generate(7) != generate(8)
    assert generate(7, "v0.19.2").stack_text != generate(7).stack_text


@pytest.mark.parametrize("seed", [1, 2, 3, 17, 42])
def test_every_generated_stack_is_valid_and_every_job_replays(seed: int, tmp_path: Path):
    case = generate(seed)
    config = load_config(parse_config(case.stack_text, case.stack))
    mix = tmp_path / "mix.yaml"
    mix.write_text(case.mix_text)
    entries = load_mix(mix, Catalog.from_stack(config, ["batch/job"]), tmp_path)
    assert len(entries) == case.jobs
    assert [e.problem for e in entries if e.status != "ok"] == []
    assert 20 <= case.jobs <= 60


def test_the_seeds_cover_what_the_engines_must_get_right():
    seen: dict[str, set[object]] = {k: set() for k in (
        "teams", "flavors", "strategy", "reclaim", "within", "borrowWithin", "limits",
        "pods", "classes", "alone", "taints",
    )}  # fmt: skip
    for seed in SEEDS:
        case = generate(seed)
        config = yaml.safe_load(case.stack_text)["config"]
        teams = config["gpu-queues:teams"]
        seen["teams"].add(len(teams))
        seen["flavors"].add(len(config["gpu-queues:flavors"]))
        seen["classes"].add(len(config.get("gpu-queues:priorityClasses", [])))
        seen["taints"].add(any("nodeTaints" in f for f in config["gpu-queues:flavors"]))
        for t in teams:
            seen["strategy"].add(t.get("queueingStrategy", "BestEffortFIFO"))
            seen["alone"].add("cohort" not in t)
            p = t.get("preemption") or {}
            seen["reclaim"].add(p.get("reclaimWithinCohort"))
            seen["within"].add(p.get("withinClusterQueue"))
            seen["borrowWithin"].add("borrowWithinCohort" in p)
            for f in t["resourceGroups"][0]["flavors"]:
                seen["limits"].update(set(f["resources"]["nvidia.com/gpu"]) - {"nominalQuota"})
        for job in yaml.safe_load_all(case.mix_text):
            if job is not None:
                seen["pods"].add(job["spec"].get("parallelism", 1))
    assert seen["teams"] == {2, 3, 4, 5}
    assert seen["flavors"] == {1, 2, 3}
    assert seen["strategy"] == {"StrictFIFO", "BestEffortFIFO"}
    assert {"Never", "LowerPriority", "Any"} <= seen["reclaim"]
    assert {"Never", "LowerPriority", "LowerOrNewerEqualPriority"} <= seen["within"]
    assert seen["borrowWithin"] == {True, False}
    assert seen["limits"] == {"borrowingLimit", "lendingLimit"}
    assert {1, 2, 3, 4} <= seen["pods"]
    assert seen["classes"] == {0, 1, 2, 3}
    assert seen["alone"] == {True, False}
    assert seen["taints"] == {True, False}


def test_organisation_seeds_are_valid_trees_with_quotas_and_weights(tmp_path: Path):
    """Seeds from ORG_FROM on: every stack validates (a division's quota is moved out of a
    team's, so the tree still adds up to the hardware), every job replays, and over 40 seeds
    there are divisions with quota of their own, fair sharing with weights, and a team of
    weight 0; a seed below ORG_FROM keeps its flat cohort."""
    seen = {"quota": 0, "fair": 0, "zero": 0}
    for seed in range(ORG_FROM, ORG_FROM + 40):
        case = generate(seed)
        config = load_config(parse_config(case.stack_text, case.stack))
        raw = yaml.safe_load(case.stack_text)["config"]
        cohorts = raw.get("gpu-queues:cohorts") or []
        if not cohorts:
            continue
        assert [c.get("parent") for c in cohorts] == [None, "lab", "lab"]
        assert {t.cohort for t in config.teams if t.cohort} <= {"lab-a", "lab-b"}
        seen["quota"] += any("resourceGroups" in c for c in cohorts)
        seen["fair"] += any("fairSharing" in c for c in cohorts)
        seen["zero"] += any(
            (t.get("fairSharing") or {}).get("weight") == 0 for t in raw["gpu-queues:teams"]
        )
        mix = tmp_path / f"mix-{seed}.yaml"
        mix.write_text(case.mix_text)
        entries = load_mix(mix, Catalog.from_stack(config, ["batch/job"]), tmp_path)
        assert [e.problem for e in entries if e.status != "ok"] == []
    assert all(count >= 3 for count in seen.values()), seen
    flat = yaml.safe_load(generate(ORG_FROM - 1).stack_text)["config"]
    assert "gpu-queues:cohorts" not in flat


def test_kinds_seeds_mix_jobsets_of_the_same_pods_and_earlier_seeds_stay_jobs(tmp_path: Path):
    """Seeds from KINDS_FROM on: some multi-pod jobs are JobSets (workers in replicas of a Job
    of 1 or 2 pods, sometimes a leader of one pod and no GPU), each checked `ok` against its
    stack with JobSet's integration on, their GPUs and pods those of the Job they stand for;
    a seed below KINDS_FROM has Jobs only."""
    seen = {"jobsets": 0, "leader": 0, "pairs": 0}
    catalog_kinds = ["batch/job", "jobset.x-k8s.io/jobset"]
    for seed in range(KINDS_FROM, KINDS_FROM + 20):
        case = generate(seed)
        config = load_config(parse_config(case.stack_text, case.stack))
        mix = tmp_path / f"mix-{seed}.yaml"
        mix.write_text(case.mix_text)
        entries = load_mix(mix, Catalog.from_stack(config, catalog_kinds), tmp_path)
        assert [e.problem for e in entries if e.status != "ok"] == []
        for e in entries:
            if e.kind != "JobSet":
                continue
            seen["jobsets"] += 1
            jobs = e.manifest["spec"]["replicatedJobs"]
            workers = jobs[-1]
            per_job = workers["template"]["spec"].get("parallelism", 1)
            seen["pairs"] += per_job == 2
            seen["leader"] += jobs[0]["name"] == "leader"
            assert 2 <= e.pods - (jobs[0]["name"] == "leader") == workers["replicas"] * per_job
    assert all(count >= 5 for count in seen.values()), seen
    for seed in (KINDS_FROM - 1, 1, ORG_FROM):
        kinds = {d["kind"] for d in yaml.safe_load_all(generate(seed).mix_text) if d}
        assert kinds == {"Job"}, seed


def test_every_kind_seeds_mix_each_kind_both_engines_replay_of_the_same_pods(tmp_path: Path):
    """Seeds from EVERY_KIND_FROM on: multi-pod jobs become JobSets, pod groups,
    LeaderWorkerSets, StatefulSets or Deployments of the same pods (a single-pod job a serving
    one of one replica, one time in ten), each `ok` against its
    stack with the release's default integrations (every one of these on); a pod group is one
    entry of its Pods; the serving kinds keep the job's duration; earlier seeds unchanged."""
    rel = release("v0.18.3")
    assert rel is not None
    frameworks = rel.default_frameworks
    seen: dict[str, int] = {}
    for seed in range(EVERY_KIND_FROM, EVERY_KIND_FROM + 20):
        case = generate(seed)
        config = load_config(parse_config(case.stack_text, case.stack))
        mix = tmp_path / f"mix-{seed}.yaml"
        mix.write_text(case.mix_text)
        entries = load_mix(mix, Catalog.from_stack(config, frameworks), tmp_path)
        assert [e.problem for e in entries if e.status != "ok"] == []
        assert len(entries) == case.jobs
        for e in entries:
            seen[e.kind] = seen.get(e.kind, 0) + 1
            if e.kind in ("Deployment", "StatefulSet"):
                # a replica per pod; a job of one pod becomes one one time in ten
                assert 1 <= e.pods == e.manifest["spec"]["replicas"] <= 4, (seed, e.name)
                assert e.manifest["spec"].get("podManagementPolicy", "Parallel") == "Parallel"
            elif e.kind != "Job":
                assert 2 <= e.pods <= 5, (seed, e.name)  # a JobSet may add a leader
            if e.kind != "Job":
                assert e.duration is not None and e.duration > 0
    kinds = {"Job", "JobSet", "Pod", "LeaderWorkerSet", "StatefulSet", "Deployment"}
    assert set(seen) == kinds and all(n >= 5 for n in seen.values()), seen
    below = {d["kind"] for d in yaml.safe_load_all(generate(EVERY_KIND_FROM - 1).mix_text) if d}
    assert below <= {"Job", "JobSet"}


def test_operator_seeds_mix_each_operator_kind_of_the_same_pods(tmp_path: Path):
    """Seeds from OPERATORS_FROM on: multi-pod jobs become, besides the kinds of
    EVERY_KIND_FROM, PyTorchJobs, the other Kubeflow v1 jobs, MPIJobs and RayClusters (a
    launcher or head of one pod more) and TrainJobs on the mix's one ClusterTrainingRuntime,
    each `ok` against its stack with the release's default integrations; earlier seeds
    unchanged (seed 709 is one make test runs)."""
    rel = release("v0.18.3")
    assert rel is not None
    seen: dict[str, int] = {}
    for seed in range(OPERATORS_FROM, OPERATORS_FROM + 20):
        case = generate(seed)
        config = load_config(parse_config(case.stack_text, case.stack))
        mix = tmp_path / f"mix-{seed}.yaml"
        mix.write_text(case.mix_text)
        entries = load_mix(mix, Catalog.from_stack(config, rel.default_frameworks), tmp_path)
        assert [(e.name, e.problem) for e in entries if e.status != "ok"] == []
        assert len(entries) == case.jobs
        docs = [d for d in yaml.safe_load_all(case.mix_text) if d]
        runtimes = [d for d in docs if d["kind"] == "ClusterTrainingRuntime"]
        assert len(runtimes) == any(e.kind == "TrainJob" for e in entries)
        for e in entries:
            seen[e.kind] = seen.get(e.kind, 0) + 1
            if e.kind in ("MPIJob", "RayCluster"):
                assert 3 <= e.pods <= 5, (seed, e.name)  # its workers and one more
            elif e.kind in ("PyTorchJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"):
                assert 2 <= e.pods <= 4, (seed, e.name)
    operators = {"PyTorchJob", "MPIJob", "TrainJob", "RayCluster"}
    assert operators <= set(seen) and all(seen[k] >= 3 for k in operators), seen
    assert len(set(seen) & {"TFJob", "XGBoostJob", "PaddleJob", "JAXJob"}) >= 3, seen
    assert {"JobSet", "Pod", "LeaderWorkerSet"} <= set(seen), seen
    assert generate(OPERATORS_FROM - 1) == generate(OPERATORS_FROM - 1)
    below = {d["kind"] for d in yaml.safe_load_all(generate(OPERATORS_FROM - 1).mix_text) if d}
    assert below <= {"Job", "JobSet", "Pod", "LeaderWorkerSet", "StatefulSet", "Deployment"}
