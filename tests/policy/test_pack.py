"""The assembled pack through pulumi_policy's own analyzer servicer, configured like the CLI."""

import json

import pytest
import yaml
from google.protobuf import json_format
from policy_harness import (
    CQ,
    DEPLOYMENT,
    LQ,
    PACK_DIR,
    REPO,
    UNKNOWN,
    Analyzer,
    advisory,
    cluster_queue,
    kueue_deployment,
    local_queue,
    mandatory,
    seed_stack,
)
from pulumi.runtime import proto

from policies import catalog, rules

pytestmark = pytest.mark.policy

CONFIGS = sorted((PACK_DIR / "config").glob("*.json"))
DEFAULT_LEVELS = {
    rules.COVERS_CPU_MEMORY: proto.MANDATORY,
    rules.WEBHOOK_VALID: proto.MANDATORY,
    rules.WHOLE_EXTENDED_RESOURCES: proto.MANDATORY,
    rules.FLAVOR_WEBHOOK_VALID: proto.MANDATORY,
    rules.FLAVORS_EXIST: proto.MANDATORY,
    rules.CLUSTERQUEUE_EXISTS: proto.MANDATORY,
    rules.NAMESPACE_SELECTOR_SET: proto.MANDATORY,
    rules.NAMESPACE_SELECTOR_NOT_ALL: proto.ADVISORY,
    rules.QUOTA_WITHIN_CAPACITY: proto.MANDATORY,
    rules.SHARED_PVC: proto.MANDATORY,
    rules.KUEUE_RELEASE_PINNED: proto.MANDATORY,
    rules.KUEUE_RELEASE_CHECKSUM: proto.MANDATORY,
    rules.JOB_QUEUED_SUSPENDED: proto.MANDATORY,
    rules.ADMISSION_CHECKS_EXIST: proto.MANDATORY,
    rules.MULTIKUEUE_WEBHOOK_VALID: proto.MANDATORY,
    rules.MULTIKUEUE_REFERENCES_EXIST: proto.MANDATORY,
    rules.TOPOLOGY_WEBHOOK_VALID: proto.MANDATORY,
    rules.FLAVOR_TOPOLOGY_EXISTS: proto.MANDATORY,
    rules.COHORT_WEBHOOK_VALID: proto.MANDATORY,
    rules.COHORT_TREE_VALID: proto.MANDATORY,
    rules.LOCALQUEUE_WEBHOOK_VALID: proto.MANDATORY,
    rules.LOCALQUEUE_NAMESPACE_SELECTED: proto.MANDATORY,
}


def test_pack_declares_every_rule_with_its_default_level():
    info = Analyzer().info
    assert info.name == "gpu-queues" and info.supportsConfig
    assert {p.name: p.enforcementLevel for p in info.policies} == DEFAULT_LEVELS


def test_stack_rules_are_stack_policies():
    kinds = {p.name: p.policy_type for p in Analyzer().info.policies}
    stack = {
        rules.FLAVORS_EXIST,
        rules.CLUSTERQUEUE_EXISTS,
        rules.QUOTA_WITHIN_CAPACITY,
        rules.ADMISSION_CHECKS_EXIST,
        rules.MULTIKUEUE_REFERENCES_EXIST,
        rules.FLAVOR_TOPOLOGY_EXISTS,
        rules.COHORT_TREE_VALID,
        rules.LOCALQUEUE_NAMESPACE_SELECTED,
    }
    assert {n for n, t in kinds.items() if t == proto.PolicyType.POLICY_TYPE_STACK} == stack


def test_config_schema_keys_and_defaults():
    schemas = {
        p.name: json_format.MessageToDict(p.configSchema.properties)
        for p in Analyzer().info.policies
    }
    assert schemas[rules.FLAVORS_EXIST]["preExistingFlavors"]["default"] == []
    assert schemas[rules.CLUSTERQUEUE_EXISTS]["preExistingClusterQueues"]["default"] == []
    assert schemas[rules.QUOTA_WITHIN_CAPACITY]["capacity"]["type"] == "object"
    assert schemas[rules.SHARED_PVC]["sharedStorageClass"]["default"] == "shared-wekafs"
    assert schemas[rules.COVERS_CPU_MEMORY]["requiredResources"]["default"] == ["cpu", "memory"]
    assert schemas[rules.KUEUE_RELEASE_CHECKSUM]["namespace"]["default"] == "kueue-system"
    assert schemas[rules.ADMISSION_CHECKS_EXIST]["preExistingAdmissionChecks"]["default"] == []
    assert schemas[rules.COHORT_TREE_VALID]["preExistingCohorts"]["default"] == []
    mk = schemas[rules.MULTIKUEUE_REFERENCES_EXIST]
    assert mk["kueueNamespace"]["default"] == "kueue-system"
    assert mk["preExistingKubeconfigSecrets"]["default"] == []


def test_dev_seed_stack_passes_with_only_the_select_all_advisory():
    found = Analyzer().preview(seed_stack())
    assert mandatory(found) == []
    assert [d.policyName for d in advisory(found)] == [rules.NAMESPACE_SELECTOR_NOT_ALL]


def test_gpu_only_queue_blocks_the_preview_with_rule_1s_message():
    found = Analyzer().analyze(CQ, cluster_queue(covered=["nvidia.com/gpu"]), "gpu-only")
    [diagnostic] = mandatory(found)
    assert diagnostic.policyName == rules.COVERS_CPU_MEMORY
    assert diagnostic.message.startswith("Every ClusterQueue covers cpu and memory")
    assert 'ClusterQueue "gpu-cluster-queue" (Pulumi resource "gpu-only")' in diagnostic.message


def test_local_queue_to_missing_cluster_queue_blocks_the_preview():
    found = Analyzer().analyze_stack([(LQ, "lq", local_queue(cluster_queue="nope"))])
    [diagnostic] = mandatory(found)
    assert diagnostic.policyName == rules.CLUSTERQUEUE_EXISTS
    assert diagnostic.urn.endswith("::lq")


def test_prod_config_makes_select_all_mandatory():
    found = Analyzer(PACK_DIR / "config" / "prod.json").analyze(CQ, cluster_queue())
    assert [d.policyName for d in mandatory(found)] == [rules.NAMESPACE_SELECTOR_NOT_ALL]


def test_dev_config_makes_missing_checksum_advisory():
    props = kueue_deployment(sha=None)
    assert [d.policyName for d in mandatory(Analyzer().analyze(DEPLOYMENT, props))] == [
        rules.KUEUE_RELEASE_CHECKSUM
    ]
    found = Analyzer(PACK_DIR / "config" / "dev.json").analyze(DEPLOYMENT, props)
    assert mandatory(found) == []
    assert [d.policyName for d in advisory(found)] == [rules.KUEUE_RELEASE_CHECKSUM]


def test_policy_config_reaches_the_rules():
    analyzer = Analyzer()
    analyzer.configure({rules.CLUSTERQUEUE_EXISTS: {"preExistingClusterQueues": ["nope"]}})
    assert analyzer.analyze_stack([(LQ, "lq", local_queue(cluster_queue="nope"))]) == []


def test_a_rule_can_be_disabled():
    analyzer = Analyzer()
    analyzer.configure({rules.COVERS_CPU_MEMORY: "disabled"})
    found = analyzer.analyze(CQ, cluster_queue(covered=["nvidia.com/gpu"]))
    assert mandatory(found) == []


def test_unknowns_during_preview_never_abort_a_policy():
    # An UnknownValueError escaping a rule would show up as "can't run policy ... during preview".
    cq = cluster_queue(namespaceSelector=UNKNOWN, cohortName=UNKNOWN)
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = UNKNOWN
    resources = [(CQ, "cq", cq), (LQ, "lq", local_queue(cluster_queue=UNKNOWN))]
    found = Analyzer().preview([*seed_stack()[:1], *resources])
    assert [d.message for d in found if "can't run policy" in d.message] == []
    assert mandatory(found) == []


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_files_name_real_policies_and_schema_keys(path):
    schemas = {p.name: set(p.configSchema.properties.keys()) for p in Analyzer().info.policies}
    for policy, value in json.loads(path.read_text()).items():
        assert policy in schemas or policy == "all", policy
        if isinstance(value, dict):
            assert set(value) - {"enforcementLevel"} <= schemas[policy]
            assert value.get("enforcementLevel", "advisory") in {
                "advisory",
                "mandatory",
                "disabled",
            }


def test_catalog_builds_fresh_policies_with_unique_names():
    names = [p.name for p in catalog.policies()]
    assert len(names) == len(set(names)) == len(DEFAULT_LEVELS)


def test_policy_project_runs_in_the_project_venv():
    project = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    venv = PACK_DIR / project["runtime"]["options"]["virtualenv"]
    assert venv.resolve() == (REPO / ".venv").resolve()
    assert project["version"]


def test_pack_requirements_come_from_the_pinned_set():
    lines = [
        line.strip()
        for line in (PACK_DIR / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert "-c ../requirements.lock" in lines
    pinned = (REPO / "requirements.lock").read_text().lower().replace("_", "-")
    for requirement in (line for line in lines if not line.startswith("-")):
        assert f"\n{requirement.lower()}==" in pinned, requirement


def test_entry_point_only_assembles_the_pack():
    source = (PACK_DIR / "__main__.py").read_text()
    assert "PolicyPack(" in source and "def " not in source
