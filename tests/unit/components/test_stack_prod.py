"""The prod stack: three teams in a cohort, two flavors, limits, RBAC."""

from __future__ import annotations

import pytest
import yaml

from gpu_queues import keys
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

# What the program must register is read from Pulumi.prod.yaml on its own (plain YAML, not
# the project's stack-file reader), so a quota change in prod moves the expectation with it.
PROD = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
CONFIG = PROD["config"]
TEAMS = tuple(t["name"] for t in CONFIG["gpu-queues:teams"])


def test_prod_creates_one_namespace_per_team(prod_run):
    created = [r for r in prod_run.resources if r.typ == "kubernetes:core/v1:Namespace"]
    names = {r.inputs["metadata"]["name"] for r in created}
    assert names == {"kueue-system", *(f"team-{t}" for t in TEAMS)}


def test_prod_cohort_tree(prod_run):
    root = prod_run.one("Cohort", "gpu-pool")
    assert root.inputs["apiVersion"] == keys.KUEUE_API_VERSION
    assert root.inputs.get("spec", {}) == {}  # a root without quota of its own
    for node in CONFIG["gpu-queues:cohorts"]:
        cohort = prod_run.one("Cohort", node["name"])
        assert cohort.inputs["apiVersion"] == keys.KUEUE_API_VERSION
        assert cohort.inputs["spec"]["parentName"] == node["parent"] == "gpu-pool"
        if "fairSharing" in node:  # the divisions' weights; the reserve has none
            weight = str(node["fairSharing"]["weight"])
            assert cohort.inputs["spec"]["fairSharing"] == {"weight": weight}
    for team in CONFIG["gpu-queues:teams"]:
        cq = prod_run.one("ClusterQueue", team["clusterQueue"])
        assert cq.inputs["spec"]["cohortName"] == team["cohort"]
    assert {t["cohort"] for t in CONFIG["gpu-queues:teams"]} == {
        "research-division",
        "product-division",
    }
    weights = {
        c["name"]: c.get("fairSharing", {}).get("weight") for c in CONFIG["gpu-queues:cohorts"]
    }
    assert weights == {"research-division": 2, "product-division": 1, "reserve": None}


def test_prod_cluster_queue_is_restricted_to_the_team_namespace(prod_run):
    for team in TEAMS:
        spec = prod_run.one("ClusterQueue", f"{team}-cq").inputs["spec"]
        assert spec["namespaceSelector"] == {
            "matchLabels": {"kubernetes.io/metadata.name": f"team-{team}"}
        }


def test_prod_queue_limits_and_flavor_order(prod_run):
    assert TEAMS == ("research", "vision", "nlp")  # the shape this file's other tests assume
    for team in CONFIG["gpu-queues:teams"]:
        spec = prod_run.one("ClusterQueue", team["clusterQueue"]).inputs["spec"]
        (written,) = team["resourceGroups"]
        (group,) = spec["resourceGroups"]
        assert group["coveredResources"] == written["coveredResources"]
        assert [f["name"] for f in group["flavors"]] == [f["name"] for f in written["flavors"]]
        for registered, flavor in zip(group["flavors"], written["flavors"], strict=True):
            # One quota per covered resource, in coveredResources order, quantities as text.
            assert registered["resources"] == [
                {"name": r, **{k: str(v) for k, v in flavor["resources"][r].items()}}
                for r in written["coveredResources"]
            ], (team["name"], flavor["name"])
        assert spec["preemption"] == team["preemption"]
        assert spec["queueingStrategy"] == team["queueingStrategy"]
    # and the limits are really set: research lends and borrows H100s
    (research,) = [t for t in CONFIG["gpu-queues:teams"] if t["name"] == "research"]
    h100 = research["resourceGroups"][0]["flavors"][0]
    assert h100["name"] == "h100"
    assert set(h100["resources"]["nvidia.com/gpu"]) == {
        "nominalQuota",
        "borrowingLimit",
        "lendingLimit",
    }


def test_prod_flavors_have_node_labels_taints_and_tolerations(prod_run):
    h100 = prod_run.one("ResourceFlavor", "h100").inputs["spec"]
    assert h100["nodeLabels"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    assert h100["nodeTaints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert h100["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_prod_local_queues(prod_run):
    for team in TEAMS:
        lq = [
            r
            for r in prod_run.of_kind("LocalQueue")
            if r.inputs["metadata"]["namespace"] == f"team-{team}"
        ]
        assert len(lq) == 1
        assert lq[0].inputs["metadata"]["name"] == "gpu-queue"
        assert lq[0].inputs["spec"] == {"clusterQueue": f"{team}-cq"}


def test_prod_rbac_lets_teams_submit_jobs_and_only_read_queues(prod_run):
    roles = [
        r
        for r in prod_run.of_kind("Role")
        if r.typ == "kubernetes:rbac.authorization.k8s.io/v1:Role"
    ]
    assert {r.inputs["metadata"]["namespace"] for r in roles} == {f"team-{t}" for t in TEAMS}
    rules = roles[0].inputs["rules"]
    by_resource = {res: rule["verbs"] for rule in rules for res in rule["resources"]}
    assert "create" in by_resource["jobs"]
    for queue_kind in ("localqueues", "workloads"):
        assert set(by_resource[queue_kind]) == {"get", "list", "watch"}
    writes = {"create", "update", "patch", "delete"}
    for role in prod_run.of_kind("ClusterRole"):
        if role.inputs["metadata"]["name"].startswith("gpu-queues-"):
            for rule in role.inputs["rules"]:
                assert not writes & set(rule["verbs"])
    reader = prod_run.one("ClusterRole", "gpu-queues-research-queue-reader")
    assert reader.inputs["rules"][0]["resourceNames"] == ["research-cq"]


def test_prod_rbac_subjects(prod_run):
    bindings = [
        r
        for r in prod_run.of_kind("RoleBinding")
        if r.inputs["metadata"].get("namespace") == "team-vision"
    ]
    assert len(bindings) == 1
    assert bindings[0].inputs["subjects"] == [
        {"kind": "Group", "name": "vision-engineers", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "pipeline", "namespace": "team-vision"},
    ]
    assert bindings[0].inputs["roleRef"]["kind"] == "Role"


def test_prod_shared_claims_one_volume_per_namespace(prod_run):
    claims = prod_run.of_kind("PersistentVolumeClaim")
    volumes = [c.inputs["spec"]["volumeName"] for c in claims]
    assert len(volumes) == len(set(volumes)) == 3


def test_prod_outputs(prod_run):
    out = prod_run.outputs
    assert out[keys.OUT_COHORT] == CONFIG["gpu-queues:cohort"]["name"]
    assert out[keys.OUT_CLUSTER_QUEUES] == {
        t["name"]: t["clusterQueue"] for t in CONFIG["gpu-queues:teams"]
    }
    assert out[keys.OUT_FLAVORS] == [f["name"] for f in CONFIG["gpu-queues:flavors"]]


def test_component_type_tokens_and_child_names(prod_run):
    components = {r.typ for r in prod_run.resources if r.typ.startswith("gpu-queues:")}
    assert components == {
        "gpu-queues:index:GpuQueues",
        "gpu-queues:kueue:KueueRelease",
        "gpu-queues:readiness:KueueReady",
        "gpu-queues:flavors:Flavors",
        "gpu-queues:cohort:SharedCohort",
        "gpu-queues:cohort:CohortTree",
        "gpu-queues:queues:TeamQueues",
        "gpu-queues:storage:SharedStorage",
    }
    assert all(r.name.startswith("gpu-queues") for r in prod_run.resources)
