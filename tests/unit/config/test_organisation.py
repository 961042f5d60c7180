"""A real organisation's queues in the stack config (docs/organisations.md): a cohort tree with
its own quotas and weights, teams with fair-sharing weights, flavor fungibility, a stop policy,
admission fair sharing and several LocalQueues in several namespaces; what each key renders,
and everything the config refuses about them, by key, all at once."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.config.stackfile import read_config
from tests.builders import Stack, Team

pytestmark = pytest.mark.unit

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "examples" / "organisation"


def example() -> dict[str, Any]:
    """docs/examples/organisation/Pulumi.org.yaml, the worked example of docs/organisations.md."""
    return read_config("org", EXAMPLE)


def errors(raw: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    return info.value.messages


def of_kind(raw: Any, kind: str) -> list[dict[str, Any]]:
    return [o for o in render.kueue_objects(raw) if o["kind"] == kind]


def tree(*cohorts: dict[str, Any], teams: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A stack of one 16-GPU flavor, the cohorts given and teams (default: one in `leaf`)."""
    stack = Stack().flavor("std")
    raw = stack.raw()
    raw["flavors"] = [
        {
            "name": "std",
            "nodes": {"count": 2, "resources": {"cpu": 64, "memory": "256Gi", "nvidia.com/gpu": 8}},
        }
    ]
    raw["cohorts"] = list(cohorts)
    raw["teams"] = teams if teams is not None else [member("a", "leaf")]
    return raw


def member(name: str, cohort: str, gpus: int = 2, **fields: Any) -> dict[str, Any]:
    built = Team(name).local_queue(f"{name}-q").cohort(cohort)
    return built.quota("std", cpu=8, memory="32Gi", **{"nvidia.com/gpu": gpus}).set(**fields).raw()


def pool(gpus: Any, **limits: Any) -> list[dict[str, Any]]:
    """A cohort's own quota of GPUs in flavor std."""
    return [
        {
            "coveredResources": ["nvidia.com/gpu"],
            "flavors": [
                {"name": "std", "resources": {"nvidia.com/gpu": {"nominalQuota": gpus, **limits}}}
            ],
        }
    ]


# --- what the worked example renders --------------------------------------------------------


def test_the_worked_example_is_valid_and_renders_its_three_levels() -> None:
    config = load_config(example())
    cohorts = {o["metadata"]["name"]: o["spec"] for o in of_kind(config, "Cohort")}
    assert cohorts["acme"]["resourceGroups"][0]["flavors"][0]["resources"][2] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "8",
    }
    assert "parentName" not in cohorts["acme"]
    assert cohorts["research"]["parentName"] == "acme"
    assert cohorts["research"]["fairSharing"] == {"weight": "2"}
    assert cohorts["product"] == {"parentName": "acme", "fairSharing": {"weight": "1"}}
    queues = {o["metadata"]["name"]: o["spec"] for o in of_kind(config, "ClusterQueue")}
    llm = queues["llm-cq"]
    assert llm["cohortName"] == "research"
    assert llm["fairSharing"] == {"weight": "2"}
    assert llm["admissionScope"] == {"admissionMode": "UsageBasedAdmissionFairSharing"}
    assert llm["flavorFungibility"] == {
        "whenCanBorrow": "MayStopSearch",
        "whenCanPreempt": "TryNextFlavor",
    }
    assert llm["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "In",
                "values": ["llm-train", "llm-eval"],
            }
        ]
    }
    assert queues["infra-cq"]["fairSharing"] == {"weight": "0"}
    assert queues["ads-cq"]["stopPolicy"] == "None"
    lqs = [
        (o["metadata"]["namespace"], o["metadata"]["name"], o["spec"])
        for o in of_kind(config, "LocalQueue")
        if o["spec"]["clusterQueue"] == "llm-cq"
    ]
    assert lqs == [
        ("llm-train", "training", {"clusterQueue": "llm-cq", "fairSharing": {"weight": "3"}}),
        ("llm-eval", "evaluation", {"clusterQueue": "llm-cq"}),
    ]
    llm_team = next(t for t in config.teams if t.name == "llm")
    # The team's default namespace and queue: the first LocalQueue's.
    assert (llm_team.namespace, llm_team.local_queue) == ("llm-train", "training")
    assert llm_team.all_namespaces == ["llm-train", "llm-eval"]


def test_the_raw_config_and_the_model_render_the_same_queues_and_cohorts() -> None:
    """The config check renders the raw config, the components the model: the same objects
    (quantities aside, which the model writes as strings)."""

    def shape(objects: list[dict[str, Any]]) -> list[Any]:
        return [
            (
                o["kind"],
                o["metadata"].get("namespace"),
                o["metadata"]["name"],
                sorted(o.get("spec", {})),
                o.get("spec", {}).get("namespaceSelector"),
            )
            for o in objects
        ]

    raw = example()
    assert shape(render.kueue_objects(raw)) == shape(render.kueue_objects(load_config(raw)))


def test_the_one_cohort_form_still_renders_a_root_without_quota() -> None:
    raw = Stack().flavor("std").cohort("pool").team(member("a", "pool")).raw()
    assert of_kind(raw, "Cohort") == [
        {
            "apiVersion": keys.KUEUE_API_VERSION,
            "kind": "Cohort",
            "metadata": {"name": "pool", "labels": {keys.LABEL_MANAGED_BY: keys.PROJECT}},
            "spec": {},
        }
    ]


def test_a_team_may_join_any_cohort_of_the_tree_and_the_old_one_beside_it() -> None:
    raw = tree(
        {"name": "root"},
        {"name": "leaf", "parent": "root"},
        teams=[member("a", "leaf"), member("b", "root"), member("c", "pool")],
    )
    raw["cohort"] = {"name": "pool"}
    config = load_config(raw)
    assert [c.name for c in config.cohorts] == ["root", "leaf"]
    assert [o["metadata"]["name"] for o in of_kind(config, "Cohort")] == ["pool", "root", "leaf"]


def test_stop_policy_and_zero_weight_render_as_written() -> None:
    raw = tree(
        {"name": "leaf"},
        teams=[member("a", "leaf", stopPolicy="HoldAndDrain", fairSharing={"weight": 0})],
    )
    (cq,) = of_kind(load_config(raw), "ClusterQueue")
    assert cq["spec"]["stopPolicy"] == "HoldAndDrain"
    assert cq["spec"]["fairSharing"] == {"weight": "0"}


# --- what the config refuses, by key, all at once ------------------------------------------


def test_a_cycle_and_an_undeclared_parent_are_refused_by_name() -> None:
    raw = tree(
        {"name": "a", "parent": "b"},
        {"name": "b", "parent": "a"},
        {"name": "leaf", "parent": "nowhere"},
    )
    found = errors(raw)
    assert any(
        m.startswith("gpu-queues:cohorts[0].parent: the cohorts form a cycle (a -> b -> a)")
        for m in found
    ), found
    assert any(
        m.startswith("gpu-queues:cohorts[1].parent: the cohorts form a cycle (b -> a -> b)")
        for m in found
    ), found
    assert any(
        m.startswith("gpu-queues:cohorts[2].parent: parent 'nowhere' is not a declared cohort")
        and "declare it under cohorts" in m
        for m in found
    ), found


def test_a_cohort_below_a_cycle_is_not_said_to_be_on_it() -> None:
    raw = tree(
        {"name": "a", "parent": "b"}, {"name": "b", "parent": "a"}, {"name": "leaf", "parent": "a"}
    )
    assert not any(m.startswith("gpu-queues:cohorts[2]") for m in errors(raw))


def test_a_cohort_quota_on_an_undeclared_flavor_is_refused() -> None:
    quota = pool(2)
    quota[0]["flavors"][0]["name"] = "b200"
    found = errors(tree({"name": "leaf", "resourceGroups": quota}))
    assert any(
        m.startswith(
            "gpu-queues:cohorts[0].resourceGroups[0].flavors[0].name: flavor 'b200' is not declared"
        )
        for m in found
    ), found


def test_a_tree_whose_quota_is_more_than_the_hardware_is_refused() -> None:
    """16 GPUs: two teams of 6 fit, the root's own 4 more than fill them (6 + 6 + 5 > 16)."""
    teams = [member("a", "leaf", gpus=6), member("b", "leaf", gpus=6)]
    assert load_config(
        tree(
            {"name": "root", "resourceGroups": pool(4)},
            {"name": "leaf", "parent": "root"},
            teams=teams,
        )
    )
    found = errors(
        tree(
            {"name": "root", "resourceGroups": pool(5)},
            {"name": "leaf", "parent": "root"},
            teams=teams,
        )
    )
    assert any(
        "nominal quotas of nvidia.com/gpu in flavor 'std' add up to 17 (a 6, b 6, cohort root 5), "
        "above the declared capacity 16" in m
        for m in found
    ), found


def test_cohort_limits_need_a_parent_and_may_exceed_its_own_quota() -> None:
    found = errors(tree({"name": "leaf", "resourceGroups": pool(2, lendingLimit=1)}))
    assert any(
        m.startswith(
            "gpu-queues:cohorts[0].resourceGroups[0].flavors[0].resources"
            "['nvidia.com/gpu'].lendingLimit: lendingLimit needs a parent cohort"
        )
        and "the cohort has no parent" in m
        and "set cohorts[0].parent" in m
        for m in found
    ), found
    # Kueue's Cohort webhook lets a cohort lend more than its own quota (its subtree's).
    assert load_config(
        tree(
            {"name": "root"},
            {"name": "leaf", "parent": "root", "resourceGroups": pool(2, lendingLimit=4)},
        )
    )


def test_a_namespace_owned_by_two_teams_is_refused() -> None:
    raw = tree(
        {"name": "leaf"},
        teams=[
            member("a", "leaf", namespaces=["a-train", "shared"], namespace=None),
            member("b", "leaf", namespaces=["shared"], namespace=None),
        ],
    )
    for t in raw["teams"]:
        del t["namespace"]
    found = errors(raw)
    assert any(
        m.startswith(
            "gpu-queues:teams[1].namespaces[0]: duplicate team namespace (each team has "
            "its own) 'shared': already used at gpu-queues:teams[0].namespaces[1]"
        )
        for m in found
    ), found


def test_a_local_queue_in_a_namespace_the_team_does_not_own_is_refused() -> None:
    a = member("a", "leaf", namespaces=["a-train", "a-eval"])
    del a["namespace"], a["localQueue"]
    a["localQueues"] = [
        {"name": "training", "namespace": "a-train"},
        {"name": "stray", "namespace": "nobody"},
        {"name": "poach", "namespace": "team-b"},
    ]
    found = errors(tree({"name": "leaf"}, teams=[a, member("b", "leaf")]))
    assert any(
        m.startswith(
            "gpu-queues:teams[0].localQueues[1].namespace: namespace 'nobody' is not one "
            "of the team's namespaces (a-eval, a-train); no team owns it"
        )
        for m in found
    ), found
    assert any(
        m.startswith(
            "gpu-queues:teams[0].localQueues[2].namespace: namespace 'team-b' is not one "
            "of the team's namespaces"
        )
        and "belongs to the team at gpu-queues:teams[1]" in m
        for m in found
    ), found
    assert not any("doesn't match ClusterQueue selector" in m for m in found), found


def test_the_default_namespace_is_one_of_the_teams_and_one_queue_form_at_a_time() -> None:
    a = member("a", "leaf", namespaces=["a-train"])  # namespace team-a is not among them
    a["localQueues"] = [{"name": "training", "namespace": "a-train"}]
    found = errors(tree({"name": "leaf"}, teams=[a]))
    assert any(
        m.startswith("gpu-queues:teams[0].namespace: namespace 'team-a' is not one of namespaces")
        for m in found
    ), found
    assert any(
        m.startswith(
            "gpu-queues:teams[0].localQueue: set localQueue (one queue) or localQueues, not both"
        )
        for m in found
    ), found


def test_bad_values_are_refused_by_key_all_at_once() -> None:
    raw = tree(
        {"name": "leaf", "fairSharing": {"weight": -1}},
        teams=[
            member(
                "a",
                "leaf",
                fairSharing={"weight": "-2"},
                stopPolicy="hold",
                flavorFungibility={"whenCanBorrow": "Borrow"},
                admissionScope={"admissionMode": "Fair"},
            )
        ],
    )
    found = errors(raw)
    for key, words in (
        ("cohorts[0].fairSharing.weight", "negative"),
        ("teams[0].fairSharing.weight", "negative"),
        ("teams[0].stopPolicy", "'None', 'Hold' or 'HoldAndDrain'"),
        ("teams[0].flavorFungibility.whenCanBorrow", "'MayStopSearch' or 'TryNextFlavor'"),
        ("teams[0].admissionScope.admissionMode", "UsageBasedAdmissionFairSharing"),
    ):
        assert any(m.startswith(f"gpu-queues:{key}: ") and words in m for m in found), (key, found)


def test_a_weight_kueue_cannot_tell_from_zero_is_refused_on_a_local_queue() -> None:
    a = member("a", "leaf")
    del a["localQueue"]
    a["localQueues"] = [{"name": "q", "namespace": "team-a", "fairSharing": {"weight": "1n"}}]
    found = errors(tree({"name": "leaf"}, teams=[a]))
    assert any(
        m.startswith("gpu-queues:teams[0].localQueues[0].fairSharing.weight: weight 1n")
        for m in found
    ), found


def test_admission_scope_needs_the_managers_admission_fair_sharing() -> None:
    scoped = member("a", "leaf", admissionScope={"admissionMode": "UsageBasedAdmissionFairSharing"})
    raw = tree({"name": "leaf"}, teams=[scoped])
    assert any(
        m.startswith(
            "gpu-queues:teams[0].admissionScope: admissionScope needs "
            "kueue.manager.admissionFairSharing"
        )
        for m in errors(raw)
    )
    on = {"usageHalfLifeTime": "1h", "usageSamplingInterval": "5m"}
    raw["kueue"] = {"manager": {"admissionFairSharing": on}}
    assert load_config(raw).kueue.manager.admission_fair_sharing is not None
    off = copy.deepcopy(raw)
    off["kueue"]["manager"]["featureGates"] = {"AdmissionFairSharing": False}
    assert any("AdmissionFairSharing: false" in m for m in errors(off))
    # NoAdmissionFairSharing asks for nothing.
    plain = tree(
        {"name": "leaf"},
        teams=[member("a", "leaf", admissionScope={"admissionMode": "NoAdmissionFairSharing"})],
    )
    assert load_config(plain)


def test_duplicate_cohort_names_across_both_forms_are_refused() -> None:
    raw = tree({"name": "pool"}, {"name": "leaf"})
    raw["cohort"] = {"name": "pool"}
    assert any(
        m.startswith(
            "gpu-queues:cohorts[0].name: duplicate cohort name 'pool': already used at "
            "gpu-queues:cohort.name"
        )
        for m in errors(raw)
    )


def test_a_team_cohort_outside_the_tree_is_refused_naming_the_tree() -> None:
    raw = tree(
        {"name": "root"}, {"name": "leaf", "parent": "root"}, teams=[member("a", "elsewhere")]
    )
    assert any(
        m == "gpu-queues:teams[0].cohort: cohort 'elsewhere' is not declared; the declared "
        "cohorts are root, leaf"
        for m in errors(raw)
    )
