"""The Kueue rules on the objects a raw stack config renders to (gpu_queues/config/rendered.py),
each problem mapped back to the key the user wrote, with its message in full: a quota's
position in the rendered ClusterQueue becomes its resource name, a flavor's spec field its own
key, the admission checks the manager's team list, and a capacity overrun the key that declares
the capacity."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.config.errors import Problem
from gpu_queues.config.rendered import (
    REQUIRED_RESOURCES,
    _flavor_loc,
    _team_loc,
    kueue_rule_problems,
)
from tests.unit.config.test_cross_check import team

pytestmark = pytest.mark.unit

QUOTAS = {"cpu": {"nominalQuota": 1}, "memory": {"nominalQuota": "1Gi"}}  # team()'s, of std


def group(flavor: str, covered: list[str], **resources: Any) -> dict[str, Any]:
    return {"coveredResources": covered, "flavors": [{"name": flavor, "resources": resources}]}


def problems(*teams: Any, flavors: Any = None, **raw: Any) -> list[str]:
    config = {"flavors": [{"name": "std"}] if flavors is None else flavors, "teams": list(teams)}
    out: list[Problem] = []
    kueue_rule_problems({**config, **raw}, out)
    return [str(p) for p in out]


def test_a_valid_stack_and_an_empty_one_have_no_problems():
    assert problems(team("a"), team("b")) == []
    assert problems(flavors=[]) == []
    out: list[Problem] = []
    kueue_rule_problems({"flavors": {"name": "std"}, "teams": "a"}, out)
    assert out == []


def test_every_queue_covers_cpu_and_memory():
    assert REQUIRED_RESOURCES == ("cpu", "memory")
    assert problems(team("a", resourceGroups=[group("std", ["cpu"], cpu={"nominalQuota": 1})])) == [
        "gpu-queues:teams[0].resourceGroups: coveredResources [cpu] do not include memory, so a "
        "job whose pods also request memory (almost every job) is never admitted; add 'memory' "
        "to a resourceGroup's coveredResources and give every flavor of that group a "
        "nominalQuota for it"
    ]


def test_queue_rules_are_reported_at_the_team_key_that_sets_them():
    raw = team("a", queueingStrategy="Fifo", preemption={"reclaimWithinCohort": "Some"})
    assert problems(raw) == [
        "gpu-queues:teams[0].queueingStrategy: queueingStrategy is 'Fifo'; use one of "
        "BestEffortFIFO, StrictFIFO",
        "gpu-queues:teams[0].preemption.reclaimWithinCohort: reclaimWithinCohort is 'Some'; use "
        "one of Never, LowerPriority, Any",
    ]


def test_a_quota_is_reported_by_its_resource_name_not_its_position():
    quotas = {
        "memory": {"nominalQuota": "1Gi"},
        "nvidia.com/gpu": {"nominalQuota": 0.5},
        "cpu": {"nominalQuota": 1, "borrowingLimit": "x"},
    }
    raw = team(
        "a",
        cohort="pool",
        resourceGroups=[group("std", ["cpu", "memory", "nvidia.com/gpu"], **quotas)],
    )
    assert problems(raw) == [
        "gpu-queues:teams[0].resourceGroups[0].flavors[0].resources.cpu.borrowingLimit: "
        "borrowingLimit 'x' is not a quantity (expected e.g. 64, 500m, 512Gi, 1.5G, 1e3); write "
        "a non-negative Kubernetes quantity such as 8, 64 or 512Gi",
        "gpu-queues:teams[0].resourceGroups[0].flavors[0].resources['nvidia.com/gpu']"
        ".nominalQuota: nominalQuota: nvidia.com/gpu is an extended resource: Kubernetes allows "
        "only whole numbers of it (a pod cannot request 500m of one), got 0.5; write a whole "
        "number of nvidia.com/gpu",
    ]


def test_a_quota_of_a_resource_not_covered_is_reported_at_the_quota():
    raw = team(
        "a",
        resourceGroups=[
            group("std", ["cpu", "memory"], **QUOTAS),
            group("gpu", ["example.com/nic"], **{"nvidia.com/gpu": {"nominalQuota": 8}}),
        ],
    )
    assert problems(raw, flavors=[{"name": "std"}, {"name": "gpu"}]) == [
        "gpu-queues:teams[0].resourceGroups[1].flavors[0].resources['nvidia.com/gpu']: resource "
        "'nvidia.com/gpu' is not in coveredResources (example.com/nic); add it to "
        "coveredResources or remove this quota",
        "gpu-queues:teams[0].resourceGroups[1].flavors[0].resources: no quota for covered "
        "resource 'example.com/nic'; give each flavor exactly one quota per covered resource: "
        "example.com/nic",
    ]


def test_a_limit_without_a_cohort_names_the_teams_cohort_key():
    quotas = {**QUOTAS, "cpu": {"nominalQuota": 1, "lendingLimit": 1}}
    assert problems(
        team("x"), team("a", resourceGroups=[group("std", ["cpu", "memory"], **quotas)])
    ) == [
        "gpu-queues:teams[1].resourceGroups[0].flavors[0].resources.cpu.lendingLimit: "
        "lendingLimit needs a cohort to borrow from or lend to, and the team has no cohort; set "
        "teams[1].cohort or remove the limit"
    ]


def test_an_undeclared_flavor_is_declared_under_flavors():
    assert problems(team("a"), flavors=[{"name": "gpu"}, {"name": None}, "std"]) == [
        "gpu-queues:teams[0].resourceGroups[0].flavors[0].name: flavor 'std' is not declared "
        "(declared: gpu), so Kueue would mark the queue inactive (FlavorNotFound) and admit "
        "nothing; declare it under flavors, or fix the name"
    ]


def test_two_dispatch_entries_of_one_team_are_reported_at_the_managers_team_list():
    manager = {"workers": [{"name": "w", "stack": "w"}], "teams": [{"name": "a"}, {"name": "a"}]}
    assert problems(team("a"), team("b"), multiKueue={"manager": manager}) == [
        "gpu-queues:multiKueue.manager.teams: admission check 'multikueue-a' is already "
        "admissionChecks[0]; list each admission check once",
        "gpu-queues:multiKueue.manager.teams: it lists 2 MultiKueue admission checks "
        "(multikueue-a, multikueue-a); Kueue allows one and would mark the queue inactive; keep "
        "one MultiKueue admission check; put every worker in its MultiKueueConfig",
    ]
    manager["teams"] = [{"name": "a"}]
    assert problems(team("a"), team("b"), multiKueue={"manager": manager}) == []


def test_flavor_rules_are_reported_at_the_flavor_key():
    flavor = {
        "name": "std",
        "nodeLabels": {"bad key!": "x"},
        "nodeTaints": [{"key": "k", "effect": "Bad"}],
        "tolerations": [{"key": "a", "operator": "Bad"}],
    }
    assert problems(flavors=[{"name": "ok"}, flavor]) == [
        "gpu-queues:flavors[1].nodeLabels['bad key!']: 'bad key!' is not a valid label key; "
        "write [prefix/]name",
        "gpu-queues:flavors[1].nodeTaints[0].effect: taint effect is 'Bad'; use one of "
        "NoSchedule, PreferNoSchedule, NoExecute",
        "gpu-queues:flavors[1].tolerations[0].operator: operator is 'Bad'; use Equal (the "
        "default) or Exists",
    ]


def test_hardware_problems_are_reported_inside_their_flavor():
    flavor = {
        "name": "std",
        "nodes": {"count": 1, "resources": {"cpu": "1", "nvidia.com/gpu": 0.5}},
        "capacity": {"cpu": 2},
    }
    assert problems(flavors=[{"name": "ok"}, flavor]) == [
        "gpu-queues:flavors[1].nodes.resources['nvidia.com/gpu']: nvidia.com/gpu is an extended "
        "resource: Kubernetes allows only whole numbers of it (a pod cannot request 500m of "
        "one), got 0.5",
        "gpu-queues:flavors[1].capacity.cpu: capacity cpu is 2 but the nodes add up to 1 node x "
        "1 = 1; make them agree, or keep only nodes (capacity follows from them)",
        "gpu-queues:flavors[1].nodes.resources['nvidia.com/gpu']: nodes.resources lists "
        "nvidia.com/gpu but capacity does not; add its total (500m) to capacity, or remove "
        "capacity (it follows from the nodes)",
    ]


def test_quotas_above_a_declared_capacity_are_reported_at_the_capacity_by_team():
    flavors = [{"name": "std", "capacity": {"cpu": 2, "memory": "2Gi"}}]
    assert problems(team("a"), team("b"), flavors=flavors) == []
    assert problems(team("a"), team("b"), team("c"), flavors=flavors) == [
        "gpu-queues:flavors[0].capacity.cpu: nominal quotas of cpu in flavor 'std' add up to 3 "
        "(a 1, b 1, c 1), above the declared capacity 2",
        "gpu-queues:flavors[0].capacity.memory: nominal quotas of memory in flavor 'std' add up "
        "to 3Gi (a 1Gi, b 1Gi, c 1Gi), above the declared capacity 2Gi",
    ]


def test_capacity_from_nodes_is_reported_at_the_per_node_resource_with_how_it_adds_up():
    flavors = [
        {"name": "std", "nodes": {"count": 2, "resources": {"cpu": "500m", "memory": "8Gi"}}}
    ]
    assert problems(team("a"), team("b"), flavors=flavors) == [
        "gpu-queues:flavors[0].nodes.resources.cpu: nominal quotas of cpu in flavor 'std' add up "
        "to 2 (a 1, b 1), above the declared capacity 1 (2 nodes x 500m)"
    ]


def test_the_first_flavor_of_a_name_holds_its_capacity_and_unnamed_queues_their_kind():
    flavors = [
        {"name": "std", "capacity": {"cpu": 1}},
        {"name": "std", "capacity": {"cpu": 5}},
        {"capacity": {"cpu": 0}},
        {"name": "", "capacity": {"cpu": 0}},
    ]
    teams = [
        team("a"),
        team("b", clusterQueue="a-cq"),  # the duplicate name is reported elsewhere
        team(None, clusterQueue="c-cq"),
        {**team("d"), "clusterQueue": None},
    ]
    assert problems(*teams, flavors=flavors) == [
        "gpu-queues:flavors[0].capacity.cpu: nominal quotas of cpu in flavor 'std' add up to 4 "
        "(a 1, a 1, ClusterQueue c-cq 1, ClusterQueue <name not known yet> 1), above the "
        "declared capacity 1"
    ]


# --- where a rendered object's field comes from ------------------------------------------------

BASE = ("teams", 3)
QUEUE = {
    "spec": {
        "resourceGroups": [
            {"flavors": [{"resources": [{"name": "cpu"}]}]},
            {"flavors": [{}, {"resources": [{"name": "memory"}, {"name": "nvidia.com/gpu"}]}]},
        ]
    }
}


@pytest.mark.parametrize(
    ("path", "loc"),
    [
        (("metadata", "name"), ("teams", 3, "clusterQueue")),
        (("metadata", "name", 0), ("teams", 3, "clusterQueue")),
        (("metadata", "labels"), BASE),
        (("metadata",), BASE),
        (("spec",), BASE),
        ((), BASE),
        (("status", "conditions"), BASE),
        (("spec", "cohortName"), ("teams", 3, "cohort")),
        (("spec", "namespaceSelector", "matchLabels"), ("teams", 3, "namespaceSelector")),
        (("spec", "queueingStrategy"), ("teams", 3, "queueingStrategy")),
        (
            ("spec", "admissionChecksStrategy", "admissionChecks", 0),
            ("multiKueue", "manager", "teams"),
        ),
        (("spec", "preemption"), ("teams", 3, "preemption")),
        (
            ("spec", "preemption", "borrowWithinCohort", "policy"),
            ("teams", 3, "preemption", "borrowWithinCohort", "policy"),
        ),
        (
            ("spec", "flavorFungibility", "preference"),
            ("teams", 3, "flavorFungibility", "preference"),
        ),
        (("spec", "resourceGroups"), ("teams", 3, "resourceGroups")),
        (
            ("spec", "resourceGroups", 1, "coveredResources", 0),
            ("teams", 3, "resourceGroups", 1, "coveredResources", 0),
        ),
        (
            ("spec", "resourceGroups", 1, "flavors", 1, "name"),
            ("teams", 3, "resourceGroups", 1, "flavors", 1, "name"),
        ),
        (
            ("spec", "resourceGroups", 1, "flavors", 1, "resources"),
            ("teams", 3, "resourceGroups", 1, "flavors", 1, "resources"),
        ),
        (
            ("spec", "resourceGroups", 1, "flavors", 1, "resources", 1),
            ("teams", 3, "resourceGroups", 1, "flavors", 1, "resources", "nvidia.com/gpu"),
        ),
        (
            ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0, "nominalQuota"),
            ("teams", 3, "resourceGroups", 0, "flavors", 0, "resources", "cpu", "nominalQuota"),
        ),
        (
            ("spec", "resourceGroups", 1, "other", 1, "resources", 0),
            ("teams", 3, "resourceGroups", 1, "other", 1, "resources", 0),
        ),
        (
            ("spec", "resourceGroups", 1, "flavors", 1, "other", 0),
            ("teams", 3, "resourceGroups", 1, "flavors", 1, "other", 0),
        ),
    ],
)
def test_a_path_of_a_teams_queue_maps_to_the_key_it_comes_from(path, loc):
    raw = {"teams": [{"name": f"team-{i}"} for i in range(4)]}  # BASE is the fourth
    assert _team_loc(BASE, QUEUE, path, raw) == loc


@pytest.mark.parametrize(
    ("path", "loc"),
    [
        (("metadata", "name"), ("flavors", 2, "name")),
        (("metadata", "name", 0), ("flavors", 2, "name")),
        (("metadata", "annotations"), ("flavors", 2)),
        (("metadata",), ("flavors", 2)),
        ((), ("flavors", 2)),
        (("spec",), ("flavors", 2)),
        (("spec", "nodeTaints", 0, "effect"), ("flavors", 2, "nodeTaints", 0, "effect")),
        (("status", "spec"), ("flavors", 2)),
    ],
)
def test_a_path_of_a_flavor_maps_to_the_key_it_comes_from(path, loc):
    assert _flavor_loc(("flavors", 2), path) == loc
