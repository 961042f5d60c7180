"""Every stack config error names its key path and what is allowed."""

from __future__ import annotations

import pytest

from gpu_queues.config.model import ConfigError, load_config
from tests.builders import Flavor, Stack, Team

pytestmark = pytest.mark.unit

CQ = "teams[0].resourceGroups[0].flavors[0]"
PREEMPTION = {
    "reclaimWithinCohort": "Any",
    "withinClusterQueue": "LowerPriority",
    "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
}


def shared_cluster() -> Stack:
    """Three teams of cohort gpu-pool whose h100 quotas add up to its 4 nodes exactly (the
    numbers the messages below name), an a100 flavor beside it, a volume per team."""
    stack = (
        Stack()
        .kueue()
        .flavor(
            Flavor("h100").nodes(4, cpu=192, memory="2Ti", gpu=8),
            Flavor("a100").nodes(2, cpu=128, memory="1Ti", gpu=8),
        )
        .cohort("gpu-pool")
        .team(
            Team("research")
            .cohort("gpu-pool")
            .quota("h100", cpu=384, memory="4Ti", gpu=16)
            .borrowing("h100", gpu=8)
            .lending("h100", gpu=8)
            .set(preemption=PREEMPTION),
            Team("vision").cohort("gpu-pool").quota("h100", cpu=192, memory="2Ti", gpu=8),
            Team("nlp").cohort("gpu-pool").quota("h100", cpu=192, memory="2Ti", gpu=8),
        )
    )
    for team in ("research", "vision", "nlp"):
        stack.storage(
            volumeName=f"shared-volume-{team}",
            claimName="shared-pvc",
            namespace=f"team-{team}",
            size="1Ti",
            storageClass="shared-wekafs",
            accessMode="ReadWriteMany",
        )
    return stack


def seed(team: Team | None = None) -> Stack:
    """The seed's one team in the default namespace, on one flavor of 8 GPUs."""
    ml = team or (
        Team("ml")
        .namespace("default", adopt=True)
        .cluster_queue("gpu-cluster-queue")
        .set(namespaceSelector="all")
        .quota("gpu-flavor", cpu=64, memory="512Gi", gpu=8)
    )
    flavor = Flavor("gpu-flavor").capacity(cpu=64, memory="512Gi", gpu=8)
    return Stack().flavor(flavor).team(ml)


def errors(raw) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    return info.value.messages


def one_error(raw, path: str) -> str:
    found = [m for m in errors(raw) if m.startswith(f"gpu-queues:{path}: ")]
    assert len(found) == 1, errors(raw)
    return found[0]


@pytest.fixture
def raw():
    return shared_cluster().raw()


def gpu(raw, team=0, flavor=0):
    return raw["teams"][team]["resourceGroups"][0]["flavors"][flavor]["resources"]["nvidia.com/gpu"]


def test_all_stacks_validate(dev_raw, prod_raw):
    from tests.conftest import ROOT, read_yaml, stack_raw

    for stack in ("dev", "staging", "prod", "local"):
        # The file read on its own (plain YAML): the config holds its flavors, cohorts and
        # teams by name, and each team's queues, as the file spells them (a team with
        # several: its first LocalQueue and namespace are its default).
        file = read_yaml(ROOT / f"Pulumi.{stack}.yaml")["config"]
        config = load_config(stack_raw(stack))
        assert [f.name for f in config.flavors] == [f["name"] for f in file["gpu-queues:flavors"]]
        cohort = file.get("gpu-queues:cohort")
        assert (config.cohort.name if config.cohort else None) == (cohort or {}).get("name")
        assert [(c.name, c.parent) for c in config.cohorts] == [
            (c["name"], c.get("parent")) for c in file.get("gpu-queues:cohorts", [])
        ], stack
        assert [(t.name, t.namespace, t.cluster_queue, t.local_queue) for t in config.teams] == [
            (
                t["name"],
                t.get("namespace") or t["localQueues"][0]["namespace"],
                t["clusterQueue"],
                t.get("localQueue") or t["localQueues"][0]["name"],
            )
            for t in file["gpu-queues:teams"]
        ], stack
        assert [t.queues for t in config.teams] == [
            [(q["name"], q["namespace"]) for q in t["localQueues"]]
            if "localQueues" in t
            else [(t["localQueue"], t["namespace"])]
            for t in file["gpu-queues:teams"]
        ], stack
    load_config(shared_cluster().raw())
    load_config(seed().raw())


def test_misspelt_key_is_named_with_the_allowed_keys(raw):
    gpu(raw)["nominalQuata"] = gpu(raw).pop("nominalQuota")
    msg = one_error(raw, f"{CQ}.resources['nvidia.com/gpu'].nominalQuata")
    assert "unknown key 'nominalQuata' (did you mean 'nominalQuota'?)" in msg
    assert "allowed keys: nominalQuota, borrowingLimit, lendingLimit" in msg


def test_unknown_top_level_key_is_an_error(raw):
    raw["team"] = []
    assert (
        "allowed keys: kubernetes, kueue, flavors, cohort, cohorts, teams, sharedStorage"
        in one_error(raw, "team")
    )


def test_value_that_is_not_a_quantity(raw):
    gpu(raw)["nominalQuota"] = "eight"
    msg = one_error(raw, f"{CQ}.resources['nvidia.com/gpu'].nominalQuota")
    assert "must be a Kubernetes quantity such as 64, 500m, 512Gi or 1e3, got 'eight'" in msg


def test_negative_quota(raw):
    gpu(raw)["borrowingLimit"] = -2
    msg = one_error(raw, f"{CQ}.resources['nvidia.com/gpu'].borrowingLimit")
    assert msg.endswith("must not be negative, got -2")


def test_quota_naming_an_undeclared_flavor(raw):
    raw["teams"][0]["resourceGroups"][0]["flavors"][0]["name"] = "h200"
    msg = one_error(raw, f"{CQ}.name")
    assert "flavor 'h200' is not declared (declared: a100, h100)" in msg
    assert "FlavorNotFound" in msg and "declare it under flavors, or fix the name" in msg


def test_quota_without_cpu_and_memory_is_never_admitted():
    raw = seed(Team("ml").quota("gpu-flavor", gpu=8)).raw()
    msg = one_error(raw, "teams[0].resourceGroups")
    assert "coveredResources [nvidia.com/gpu] do not include cpu, memory" in msg
    assert "never admitted" in msg


def test_quota_missing_for_a_covered_resource():
    raw = seed().raw()
    del raw["teams"][0]["resourceGroups"][0]["flavors"][0]["resources"]["memory"]
    msg = one_error(raw, "teams[0].resourceGroups[0].flavors[0].resources")
    assert "no quota for covered resource 'memory'" in msg


def test_lending_limit_above_nominal_quota(raw):
    gpu(raw)["lendingLimit"] = 17
    msg = one_error(raw, f"{CQ}.resources['nvidia.com/gpu'].lendingLimit")
    assert "lendingLimit 17 is above nominalQuota 16" in msg


def test_limits_without_a_cohort(raw):
    del raw["teams"][0]["cohort"]
    messages = errors(raw)
    assert any(
        m.startswith(f"gpu-queues:{CQ}.resources['nvidia.com/gpu'].borrowingLimit: ")
        and "borrowingLimit needs a cohort" in m
        for m in messages
    )
    assert any("lendingLimit needs a cohort" in m for m in messages)


def test_team_cohort_must_be_declared(raw):
    raw["teams"][1]["cohort"] = "gpu-poool"
    msg = one_error(raw, "teams[1].cohort")
    assert "cohort 'gpu-poool' is not declared; the declared cohort is 'gpu-pool'" in msg


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("name", "team name"),
        ("namespace", "team namespace"),
        ("clusterQueue", "ClusterQueue name"),
    ],
)
def test_duplicate_names(raw, key, what):
    raw["teams"][2][key] = raw["teams"][0][key]
    msg = one_error(raw, f"teams[2].{key}")
    assert f"duplicate {what}" in msg
    assert "already used at gpu-queues:teams[0]" in msg


def test_duplicate_flavor_names(raw):
    raw["flavors"][1]["name"] = "h100"
    assert "duplicate flavor name 'h100'" in one_error(raw, "flavors[1].name")


def test_invalid_kubernetes_names(raw):
    raw["teams"][0]["namespace"] = "Team_Research"
    raw["teams"][0]["localQueue"] = "gpu queue"
    assert "'Team_Research' is not a valid Kubernetes name" in one_error(raw, "teams[0].namespace")
    assert "'gpu queue' is not a valid Kubernetes object name" in one_error(
        raw, "teams[0].localQueue"
    )


def test_quotas_above_flavor_capacity_give_the_numbers(raw):
    gpu(raw, team=2)["nominalQuota"] = 12
    gpu(raw, team=2)["lendingLimit"] = 4
    msg = one_error(raw, "flavors[0].nodes.resources['nvidia.com/gpu']")
    assert (
        "nominal quotas of nvidia.com/gpu in flavor 'h100' add up to 36 "
        "(research 16, vision 8, nlp 12), above the declared capacity 32 (4 nodes x 8)"
    ) in msg


def test_quotas_above_a_declared_total_name_the_capacity_key(raw):
    raw["flavors"][0]["capacity"] = {"nvidia.com/gpu": 32}
    gpu(raw, team=2)["nominalQuota"] = 12
    gpu(raw, team=2)["lendingLimit"] = 4
    msg = one_error(raw, "flavors[0].capacity['nvidia.com/gpu']")
    assert "add up to 36 (research 16, vision 8, nlp 12), above the declared capacity 32" in msg


def test_capacity_compares_quantities_not_strings(raw):
    raw["flavors"][0]["nodes"]["resources"]["memory"] = "2048Gi"  # == 2Ti, 4 nodes: 8Ti
    load_config(raw)
    raw["flavors"][0]["nodes"]["resources"]["memory"] = "2047Gi"
    assert "add up to" in one_error(raw, "flavors[0].nodes.resources.memory")


@pytest.mark.parametrize("version", ["0.18.3", "v0.18", "v0.18.3-rc.1", "latest"])
def test_kueue_version_must_be_vxyz(raw, version):
    raw["kueue"]["version"] = version
    msg = one_error(raw, "kueue.version")
    assert f"Kueue version must have the form vX.Y.Z (for example v0.18.3), got '{version}'" in msg


def test_enum_values_list_what_is_allowed(raw):
    raw["teams"][0]["queueingStrategy"] = "FIFO"
    msg = one_error(raw, "teams[0].queueingStrategy")
    assert "'BestEffortFIFO' or 'StrictFIFO'" in msg


def test_manifest_url_and_path_are_exclusive(raw):
    raw["kueue"]["manifest"] = {"url": "https://mirror.example/m.yaml", "path": "m.yaml"}
    assert "set either url or path, not both" in one_error(raw, "kueue.manifest")


def test_sha256_must_be_a_digest(raw):
    raw["kueue"]["manifest"] = {"sha256": "abc"}
    assert "must be 64 lowercase hex digits" in one_error(raw, "kueue.manifest.sha256")


def test_one_persistent_volume_cannot_serve_two_claims(raw):
    raw["sharedStorage"][1]["volumeName"] = raw["sharedStorage"][0]["volumeName"]
    msg = one_error(raw, "sharedStorage[1].volumeName")
    assert "is already claimed by team-research/shared-pvc" in msg
    assert "a PersistentVolume binds to exactly one claim" in msg


def test_claim_must_be_in_a_team_namespace(raw):
    raw["sharedStorage"][0]["namespace"] = "elsewhere"
    msg = one_error(raw, "sharedStorage[0].namespace")
    assert "not a team namespace" in msg and "team-research" in msg


def test_system_namespace_must_be_adopted():
    not_adopted = Team("ml").namespace("default").quota("gpu-flavor", cpu=64, memory="512Gi", gpu=8)
    raw = seed(not_adopted).raw()
    assert "set adoptNamespace: true" in one_error(raw, "teams[0].adoptNamespace")


def test_borrow_within_cohort_needs_reclaim(raw):
    raw["teams"][0]["preemption"]["reclaimWithinCohort"] = "Never"
    msg = one_error(raw, "teams[0].preemption.borrowWithinCohort.policy")
    assert "borrowWithinCohort.policy is LowerPriority but reclaimWithinCohort is Never" in msg
    assert "set reclaimWithinCohort to LowerPriority or Any" in msg


def test_all_problems_are_reported_at_once(raw):
    raw["kueue"]["version"] = "0.18"
    raw["teams"][0]["nmae"] = "x"
    gpu(raw)["lendingLimit"] = 99
    raw["teams"][1]["resourceGroups"][0]["flavors"][0]["name"] = "nope"
    messages = errors(raw)
    assert len(messages) >= 4
    paths = {m.split(": ", 1)[0] for m in messages}
    assert {
        "gpu-queues:kueue.version",
        "gpu-queues:teams[0].nmae",
        f"gpu-queues:{CQ}.resources['nvidia.com/gpu'].lendingLimit",
        "gpu-queues:teams[1].resourceGroups[0].flavors[0].name",
    } <= paths


def test_kubeconfig_is_never_echoed_in_errors(raw):
    raw["kubernetes"] = {"kubeconfig": 12345, "contxt": "prod"}
    text = "\n".join(errors(raw))
    assert "12345" not in text
    assert "unknown key 'contxt'" in text
