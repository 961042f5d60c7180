"""Never fitting, found before the replay (gpu_queues/whatif/fits.py): Kueue's maximum
capacity of a ClusterQueue in a cohort tree, worked by hand from its rules
(pkg/cache/scheduler/resource_node.go), and the lines a workload over it gets. Kueue's own
code is the judge in tests/toolchain/test_fits.py."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.whatif import fits
from gpu_queues.whatif.fits import FLAVOR_ANNOTATION, Ceilings, never_fits
from gpu_queues.whatif.mix import Entry

pytestmark = pytest.mark.unit

GPU = "nvidia.com/gpu"


def quota(gpus: int, borrowing: int | None = None, lending: int | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"name": GPU, "nominalQuota": str(gpus)}
    if borrowing is not None:
        r["borrowingLimit"] = str(borrowing)
    if lending is not None:
        r["lendingLimit"] = str(lending)
    return {
        "coveredResources": ["cpu", GPU],
        "flavors": [
            {"name": "h100", "resources": [{"name": "cpu", "nominalQuota": "1000"}, r]},
        ],
    }


def obj(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name}, "spec": spec}


def node(name: str, gpus: int, cpu: int = 96) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "annotations": {FLAVOR_ANNOTATION: "h100"}},
        "status": {"allocatable": {"cpu": str(cpu), GPU: str(gpus), "pods": "110"}},
    }


# org (own quota 4) > div (no quota) > a (8, borrowingLimit 2, lendingLimit 4) and b (6);
# org > c (10, lendingLimit 0). By hand: subtree a 8, b 6, div 0 + min(8, 4) + 6 = 10, c 10,
# org 4 + 10 + min(10, 0) = 14. Maximum capacity: org 14; div 0 + 14 = 14; a: its local 8 - 4
# = 4, plus div's 14, is 18, at most 8 + 2 = 10; b 0 + 14 = 14; c: 10 - 0 = 10, plus 14, 24.
TREE = [
    obj("Cohort", "org", {"resourceGroups": [quota(4)]}),
    obj("Cohort", "div", {"parentName": "org"}),
    obj("ClusterQueue", "a", {"cohortName": "div", "resourceGroups": [quota(8, 2, 4)]}),
    obj("ClusterQueue", "b", {"cohortName": "div", "resourceGroups": [quota(6)]}),
    obj("ClusterQueue", "c", {"cohortName": "org", "resourceGroups": [quota(10, None, 0)]}),
    obj("ClusterQueue", "alone", {"resourceGroups": [quota(5, 3)]}),
]


def test_maximum_capacity_follows_kueues_rules_through_the_tree() -> None:
    c = Ceilings(TREE, [])
    got = {cq: c.potential(f"cq/{cq}", ("h100", GPU)) for cq in ("a", "b", "c", "alone")}
    assert got == {"a": 10, "b": 14, "c": 24, "alone": 5}
    assert c.subtree("cohort/div", ("h100", GPU)) == 10
    assert c.subtree("cohort/org", ("h100", GPU)) == 14


def job(cq: str, pods: int, gpus: int, cpu: str = "1", **extra: str) -> Entry:
    requests = {"cpu": cpu, **extra}
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns"},
        "spec": {
            "parallelism": pods,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "m", "resources": {"requests": requests, "limits": {GPU: gpus}}}
                    ]
                }
            },
        },
    }
    return Entry(0, "mix#1", "Job", "j", "ns", "q", cluster_queue=cq, manifest=manifest)


def test_a_pod_set_over_the_maximum_capacity_never_fits_and_one_at_it_may() -> None:
    c = Ceilings(TREE, [node("n0", 8), node("n1", 8)])
    assert c.never(job("a", 2, 5)) is None  # 10 is the maximum: it may be admitted
    assert c.never(job("a", 3, 4)) == (
        "ns/j (Job) can never run: pod set main asks for 12 nvidia.com/gpu (3 x 4), more than "
        "ClusterQueue a can ever hold in any flavor (Kueue's maximum capacity: h100: 10)"
    )
    assert c.never(job("c", 3, 8)) is None  # 24 within c's 24


def test_a_pod_larger_than_every_node_never_runs_even_within_quota() -> None:
    c = Ceilings(TREE, [node("n0", 8), node("n1", 8, cpu=192)])
    assert c.never(job("c", 1, 16)) == (
        "ns/j (Job) can never run: a pod of pod set main (cpu 1, nvidia.com/gpu 16) fits no "
        "node of the flavors ClusterQueue c has for it (h100)"
    )
    assert c.never(job("c", 1, 8, cpu="150")) is None  # n1 holds it
    assert c.never(job("c", 1, 8, cpu="200")) is not None
    # Without declared nodes (a flavor with capacity only) node fit is not known: not said.
    assert Ceilings(TREE, []).never(job("c", 1, 16)) is None


def test_a_resource_the_cluster_queue_does_not_cover_never_fits() -> None:
    c = Ceilings(TREE, [])
    assert c.never(job("b", 1, 1, **{"example.com/fpga": "1"})) == (
        "ns/j (Job) can never run: pod set main asks for example.com/fpga, which ClusterQueue b "
        "does not cover"
    )


def test_pods_count_against_a_pods_quota_when_the_cluster_queue_covers_it() -> None:
    spec = {
        "resourceGroups": [
            {
                "coveredResources": [GPU, "pods"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": GPU, "nominalQuota": "64"},
                            {"name": "pods", "nominalQuota": "4"},
                        ],
                    }
                ],
            }
        ]
    }
    c = Ceilings([obj("ClusterQueue", "p", spec)], [])
    assert c.never(job("p", 4, 1, cpu="0")) is None
    why = c.never(job("p", 5, 1, cpu="0"))
    assert why is not None and "asks for 5 pods (5 x 1)" in why


def test_entries_not_replayed_or_without_a_cluster_queue_are_not_judged() -> None:
    c = Ceilings(TREE, [])
    refused = Entry(0, "mix#1", "Job", "j", "ns", "q", "invalid", "bad", cluster_queue="a")
    assert c.never(refused) is None
    assert c.never(job("nowhere", 9, 9)) is None
    assert Fraction(0) == c.potential("cq/a", ("h100", "memory"))


def test_never_fits_judges_by_the_objects_it_is_given_without_rendering_the_stack_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = load_config(read_config("prod"))

    def rendered(_: object) -> list[dict[str, Any]]:
        raise AssertionError("the stack's objects were rendered again")

    monkeypatch.setattr(fits, "kueue_objects", rendered)
    # prod has no ClusterQueue a: only TREE, given, can say that 11 GPUs never fit in its 10.
    (why,) = never_fits(config, [job("a", 11, 1)], [], [obj("Namespace", "ns", {}), *TREE])
    assert "more than ClusterQueue a can ever hold" in why
    assert never_fits(config, [job("a", 10, 1)], [], TREE) == []
