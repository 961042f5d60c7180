"""TrainJobs in a what-if mix (gpu_queues/whatif/trainjob.py): the runtime documents the mix
carries beside them (no rows; a malformed one an invalid row naming its field), a TrainJob
whose runtime the mix does not hold an invalid row naming spec.runtimeRef, and its pod sets as
the Trainer makes its JobSet and Kueue counts it, worked out by hand."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.whatif.mix import Entry, load_mix
from tests.unit.whatif.test_bad_input import (
    ANCESTOR,
    CATALOG,
    LEADER_POD,
    META,
    NODE_POD,
    QUANTITIES,
    REPLACEMENTS,
    RUNTIME,
    TRAINJOB,
    category,
    get,
    nodes,
    put,
    shown,
    sound,
)

pytestmark = pytest.mark.unit


def mix(tmp_path: Path, *bodies: Any) -> list[Entry]:
    path = tmp_path / "mix.yaml"
    path.write_text(yaml.safe_dump_all(list(bodies)))
    return load_mix(path, CATALOG)


def step(name: str, ancestor: str, pod: dict[str, Any], **replicated: Any) -> dict[str, Any]:
    """A runtime's replicated job: `replicated` its fields (replicas), a parallelism in it goes
    to its Job's spec."""
    job: dict[str, Any] = {"template": {"spec": pod}}
    if "parallelism" in replicated:
        job["parallelism"] = replicated.pop("parallelism")
    return {
        "name": name,
        "template": {"metadata": {"labels": {ANCESTOR: ancestor}}, "spec": job},
        **replicated,
    }


def runtime(*steps: dict[str, Any], policy: dict[str, Any] | None = None) -> dict[str, Any]:
    body = copy.deepcopy(RUNTIME)
    body["spec"]["template"]["spec"]["replicatedJobs"] = list(steps)
    if policy is None:
        del body["spec"]["mlPolicy"]
    else:
        body["spec"]["mlPolicy"] = policy
    return body


def trainjob(**trainer: Any) -> dict[str, Any]:
    body = copy.deepcopy(TRAINJOB)
    body["spec"]["trainer"] = trainer
    return body


GPUS_2 = {"limits": {"nvidia.com/gpu": 2}}


@pytest.mark.parametrize(
    ("runtime_body", "trainer", "want"),
    [
        # No mlPolicy: the trainer step's parallelism (3), unless the TrainJob gives numNodes.
        (runtime(step("node", "trainer", NODE_POD, parallelism=3)), {}, (6, 3)),
        (runtime(step("node", "trainer", NODE_POD, parallelism=3)), {"numNodes": 5}, (10, 5)),
        # An mlPolicy: its numNodes (1 when unset), over the step's parallelism.
        (runtime(step("node", "trainer", NODE_POD, parallelism=3), policy={"numNodes": 2}),
         {}, (4, 2)),
        (runtime(step("node", "trainer", NODE_POD, parallelism=3), policy={"torch": {}}),
         {}, (2, 1)),
        # The trainer and initializer steps are one Job whatever their replicas; another step's
        # replicas count.
        (runtime(step("node", "trainer", NODE_POD, replicas=4),
                 step("cache", "dataset-initializer", LEADER_POD, replicas=3, parallelism=2),
                 step("launcher", "launcher", LEADER_POD, replicas=3, parallelism=2)),
         {"numNodes": 2}, (4, 10)),
        # resourcesPerNode in place of the node container's resources: 1 GPU a node, 4 nodes.
        (runtime(step("node", "trainer", NODE_POD), policy={"numNodes": 4}),
         {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}, (4, 4)),
        # MPI running its launcher as a node: the node step runs numNodes less one.
        (runtime(step("node", "trainer", NODE_POD),
                 policy={"numNodes": 1, "mpi": {"runLauncherAsNode": True}}),
         {"numNodes": 4}, (6, 3)),
    ],
)  # fmt: skip
def test_a_trainjobs_gpus_and_pods_are_its_runtimes_steps_as_the_trainer_makes_them(
    tmp_path: Path, runtime_body: dict[str, Any], trainer: dict[str, Any], want: tuple[int, int]
) -> None:
    (entry,) = mix(tmp_path, runtime_body, trainjob(**trainer))
    assert entry.status == "ok", entry.problem
    assert (entry.gpus, entry.pods) == want
    assert entry.runtime is not None and entry.runtime["metadata"]["name"] == "torch-distributed"


def test_resources_per_node_go_to_the_node_container_of_the_trainer_step_only(
    tmp_path: Path,
) -> None:
    # The initializer's container named node too: not the trainer step's, so its own (no GPU).
    init_pod = copy.deepcopy(LEADER_POD)
    init_pod["containers"][0]["name"] = "node"
    body = runtime(step("init", "dataset-initializer", init_pod), step("node", "trainer", NODE_POD))
    (entry,) = mix(tmp_path, body, trainjob(numNodes=2, resourcesPerNode=GPUS_2))
    assert (entry.gpus, entry.pods) == (4, 3)


def test_a_trainjob_whose_runtime_is_not_in_the_mix_is_invalid_naming_its_runtime_ref(
    tmp_path: Path,
) -> None:
    (entry,) = mix(tmp_path, trainjob(numNodes=2))
    assert entry.status == "invalid"
    assert (entry.problem or "").startswith(
        "spec.runtimeRef: ClusterTrainingRuntime torch-distributed is not in the mix"
    ), entry.problem
    assert not entry.manifest


def test_a_training_runtime_is_found_in_the_trainjobs_namespace_only(tmp_path: Path) -> None:
    namespaced = copy.deepcopy(RUNTIME)
    namespaced["kind"] = "TrainingRuntime"
    namespaced["metadata"] = {"name": "torch-distributed", "namespace": "team-research"}
    elsewhere = copy.deepcopy(namespaced)
    elsewhere["metadata"]["namespace"] = "team-other"
    job = copy.deepcopy(TRAINJOB)
    job["spec"]["runtimeRef"]["kind"] = "TrainingRuntime"
    (found,) = mix(tmp_path, namespaced, job)
    assert found.status == "ok" and found.runtime is not None, found.problem
    assert found.runtime["metadata"]["namespace"] == "team-research"
    (lost,) = mix(tmp_path, elsewhere, job)
    assert (lost.problem or "").startswith(
        "spec.runtimeRef: TrainingRuntime team-research/torch-distributed is not in the mix"
    ), lost.problem


def test_a_runtime_ref_of_another_kind_is_invalid_naming_it(tmp_path: Path) -> None:
    job = copy.deepcopy(TRAINJOB)
    job["spec"]["runtimeRef"]["kind"] = "JobSet"
    (entry,) = mix(tmp_path, RUNTIME, job)
    assert entry.status == "invalid"
    assert (entry.problem or "").startswith("spec.runtimeRef: JobSet of apiGroup"), entry.problem


def test_the_runtime_ref_defaults_to_a_cluster_training_runtime_of_the_trainer(
    tmp_path: Path,
) -> None:
    job = copy.deepcopy(TRAINJOB)
    job["spec"]["runtimeRef"] = {"name": "torch-distributed"}
    (entry,) = mix(tmp_path, RUNTIME, job)
    assert entry.status == "ok", entry.problem


def test_a_runtime_given_twice_is_a_row_and_the_first_one_serves(tmp_path: Path) -> None:
    second = copy.deepcopy(RUNTIME)
    second["spec"]["mlPolicy"]["numNodes"] = 7
    entries = mix(tmp_path, RUNTIME, second, trainjob(resourcesPerNode=GPUS_2))
    assert [(e.kind, e.status) for e in entries] == [
        ("ClusterTrainingRuntime", "invalid"),
        ("TrainJob", "ok"),
    ]
    assert "comes earlier in the mix (" in (entries[0].problem or "")
    assert (entries[1].gpus, entries[1].pods) == (2, 2)  # the first's numNodes, 1, + initializer


def test_a_runtime_given_twice_identically_is_the_same_runtime_and_no_row(
    tmp_path: Path,
) -> None:
    # A recording's folder carries a ClusterTrainingRuntime in each namespace's file whose
    # TrainJobs name it: the same object, not a clash of names.
    folder = tmp_path / "day"
    folder.mkdir()
    for name in ("a", "b"):
        job = trainjob(resourcesPerNode=GPUS_2)
        job["metadata"]["name"] = name
        (folder / f"{name}.yaml").write_text(yaml.safe_dump_all([RUNTIME, job]))
    entries = load_mix(folder, CATALOG)
    assert [(e.kind, e.name, e.status, e.gpus) for e in entries] == [
        ("TrainJob", "a", "ok", 2), ("TrainJob", "b", "ok", 2)
    ]  # fmt: skip
    different = copy.deepcopy(RUNTIME)
    different["spec"]["mlPolicy"]["numNodes"] = 7
    (folder / "b.yaml").write_text(yaml.safe_dump(different))
    assert [e.status for e in load_mix(folder, CATALOG)] == ["ok", "invalid"]


def test_a_trainjob_on_a_refused_runtime_says_so(tmp_path: Path) -> None:
    broken = put(RUNTIME, ("spec", "template", "spec", "replicatedJobs"), "x")
    runtime_row, job_row = mix(tmp_path, broken, trainjob(numNodes=2))
    assert runtime_row.status == "invalid"
    assert (runtime_row.problem or "").startswith("spec.template.spec.replicatedJobs:")
    assert job_row.problem == (
        "spec.runtimeRef: the mix's ClusterTrainingRuntime torch-distributed is invalid "
        "(its row says why)"
    )


def test_every_node_of_a_runtime_replaced_by_any_type_is_a_row_naming_the_field(
    tmp_path: Path,
) -> None:
    """The bad-input fuzz (test_bad_input.py) on the runtime beside a valid TrainJob: a runtime
    of a field of another type is an invalid row naming it, never an exception, and its
    TrainJob a row saying its runtime is refused."""
    body = copy.deepcopy(RUNTIME)
    failures, cases = [], 0
    for path in nodes(body):
        original = get(body, path)
        for replacement in REPLACEMENTS:
            cases += 1
            try:
                entries = mix(tmp_path, put(body, path, replacement), TRAINJOB)
            except Exception as exc:
                failures.append(f"{shown(path)} = {replacement!r}: raised {exc!r}")
                continue
            wrong = next((why for e in entries if (why := sound(e))), None)
            other_type = replacement is not None and category(replacement) != category(original)
            quantity = len(path) > 1 and path[-2] in QUANTITIES and isinstance(replacement, int)
            rows = entries[:-1]  # the runtime's row, if any: it comes first in the mix
            if not wrong and other_type and not quantity:
                if len(rows) != 1 or rows[0].status != "invalid":
                    wrong = f"runtime rows {[(e.kind, e.status) for e in entries]}"
                elif not (rows[0].problem or "").startswith(f"{shown(path)}:"):
                    wrong = f"the reason does not name {shown(path)}: {rows[0].problem}"
            if wrong:
                failures.append(f"{shown(path)} = {replacement!r}: {wrong}")
    assert cases > 200
    assert not failures, "\n".join(failures)


def test_a_runtime_is_no_row_and_takes_no_place_from_the_workloads(tmp_path: Path) -> None:
    other = {**TRAINJOB, "metadata": {**META, "name": "second"}}
    entries = mix(tmp_path, TRAINJOB, RUNTIME, other)
    assert [(e.index, e.name, e.status) for e in entries] == [
        (0, "train", "ok"),
        (2, "second", "ok"),
    ]
