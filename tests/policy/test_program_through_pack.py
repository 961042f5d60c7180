"""The program's own output through the assembled pack (issue 10, item 13).

Every committed stack (Pulumi.*.yaml, discovered) is built under Pulumi mocks, and every
resource it registers goes through pulumi_policy's analyzer servicer configured with the pack
config the stack's workflow uses. So is a stack nobody wrote. The pack and the config check
share one validation core, so the program's output must pass the pack; the drift this
catches is the one issue 10 found (a capacity annotation the pack read and nothing wrote).

The manifest: staging and prod do not pin kueue.manifest.sha256 yet (the pin and its
provenance are another part of issue 10). As a sandbox substitution would, these tests point
every stack at the unit-test manifest (tests/unit/release/data/kueue-manifest.yaml) with its own
sha256 as the pin, and the program's loader verifies that digest before anything is built.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from policy_harness import (
    COHORT,
    CQ,
    PACK_DIR,
    REPO,
    RF,
    Analyzer,
    mandatory,
    run_policy,
    stack_args,
)

from gpu_queues import keys
from gpu_queues.components.validation import validate
from gpu_queues.config.model import StackConfig
from gpu_queues.kueue.capacity import CAPACITY_ANNOTATION
from gpu_queues.release.manifest import load_manifest
from gpu_queues.tools.changed_stacks import is_deployable
from gpu_queues.tools.policy_configs import policy_config
from policies import rules
from tests.conftest import MANIFEST, MockRun, read_yaml, run_stack, stack_raw, stand_in
from tests.unit.config.stackgen import random_stack

pytestmark = pytest.mark.policy

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in REPO.glob("Pulumi.*.yaml"))


def workflow_pack_configs() -> dict[str, str]:
    """stack -> policy pack config file, from every workflow job that runs the pack on a stack."""
    found: dict[str, str] = {}
    for path in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        for job in (read_yaml(path) or {}).get("jobs", {}).values():
            given = job.get("with") or {}
            stack, config = given.get("stack"), given.get("policy-config")
            if isinstance(stack, str) and isinstance(config, str) and "${{" not in stack:
                found[stack] = config
    return found


def pack_config_of(stack: str) -> Path | None:
    """What the stack's workflow uses: the deploy job's file; else the preview matrix's choice
    (gpu_queues.tools.changed_stacks); sandbox stacks (local*) get the pack defaults, as the e2e
    tests."""
    named = workflow_pack_configs().get(stack)
    if named is not None:
        return REPO / named
    if is_deployable(stack):
        return REPO / policy_config(stack)
    return None


def with_test_manifest(raw: dict[str, Any]) -> dict[str, Any]:
    """The stack with the unit-test manifest pinned by its own digest (sandbox-style)."""
    raw = copy.deepcopy(raw)
    kueue = raw.setdefault(keys.KEY_KUEUE, {})
    kueue["manifest"] = {
        "path": str(MANIFEST.relative_to(REPO)),
        "sha256": hashlib.sha256(MANIFEST.read_bytes()).hexdigest(),
    }
    return raw


def build(raw: dict[str, Any]) -> tuple[StackConfig, MockRun]:
    """The program's validation phase (gpu_queues.components.validation.validate: config, manifest
    digest and
    allowlist), then the stack under mocks with the digest it verified."""
    config, _ = validate(with_test_manifest(raw), releases=stand_in())
    manifest = load_manifest(config.kueue) if config.kueue.install else None
    return config, run_stack(config, manifest, verified_sha256=config.kueue.manifest.sha256)


@functools.cache
def built(stack: str) -> tuple[StackConfig, MockRun]:
    """A committed stack built once per test run (tests only read it, or copy first)."""
    return build(stack_raw(stack))


def resources(run: MockRun) -> list[tuple[str, str, dict[str, Any]]]:
    return [(r.typ, r.name, r.inputs) for r in run.resources]


def test_every_committed_stack_is_found():
    assert {"dev", "staging", "prod", "local"} <= set(STACKS)


def test_deploy_and_preview_check_a_stack_with_the_same_pack_config():
    for stack, config in workflow_pack_configs().items():
        assert policy_config(stack) == config, stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_committed_stack_passes_the_pack_its_workflow_uses(stack):
    _, run = built(stack)
    found = Analyzer(pack_config_of(stack)).preview(resources(run))
    assert [d.message for d in mandatory(found)] == []


@pytest.mark.parametrize("seed", range(6))
def test_a_stack_nobody_wrote_passes_the_strict_pack(seed):
    raw = random_stack(seed)
    config, run = build(raw)
    found = Analyzer(PACK_DIR / "config" / "prod.json").preview(resources(run))
    assert [d.message for d in mandatory(found)] == []
    assert len(run.of_kind("ClusterQueue")) == len(config.teams)


# Prod's objects written out by hand from Pulumi.prod.yaml, in the shape Kueue documents
# for kueue.x-k8s.io/v1beta2 (ClusterQueue: cohortName, namespaceSelector, resourceGroups of
# coveredResources and flavors with one quota per covered resource in that order,
# preemption, queueingStrategy; LocalQueue: spec.clusterQueue; ResourceFlavor: nodeLabels,
# nodeTaints, tolerations; Cohort), not with the render functions the components call.
MANAGED = {"app.kubernetes.io/managed-by": "gpu-queues"}
V1BETA2 = "kueue.x-k8s.io/v1beta2"
RESEARCH_CQ = {
    "apiVersion": V1BETA2,
    "kind": "ClusterQueue",
    "metadata": {"name": "research-cq", "labels": {**MANAGED, "gpu-queues.dev/team": "research"}},
    "spec": {
        "cohortName": "research-division",
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-research"}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "384"},
                            {"name": "memory", "nominalQuota": "4Ti"},
                            {
                                "name": "nvidia.com/gpu",
                                "nominalQuota": "16",
                                "borrowingLimit": "8",
                                "lendingLimit": "8",
                            },
                        ],
                    },
                    {
                        "name": "a100",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64"},
                            {"name": "memory", "nominalQuota": "512Gi"},
                            {
                                "name": "nvidia.com/gpu",
                                "nominalQuota": "4",
                                "borrowingLimit": "4",
                                "lendingLimit": "2",
                            },
                        ],
                    },
                ],
            }
        ],
        "preemption": {
            "reclaimWithinCohort": "Any",
            "withinClusterQueue": "LowerPriority",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100},
        },
        "queueingStrategy": "BestEffortFIFO",
    },
}
RESEARCH_LQ = {
    "apiVersion": V1BETA2,
    "kind": "LocalQueue",
    "metadata": {
        "name": "gpu-queue",
        "namespace": "team-research",
        "labels": {**MANAGED, "gpu-queues.dev/team": "research"},
    },
    "spec": {"clusterQueue": "research-cq"},
}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
FLAVORS = {
    "h100": {
        "apiVersion": V1BETA2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "h100", "labels": MANAGED},
        "spec": {
            "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "nodeTaints": [GPU_TAINT],
            "tolerations": [GPU_TOLERATION],
        },
    },
    "a100": {
        "apiVersion": V1BETA2,
        "kind": "ResourceFlavor",
        "metadata": {"name": "a100", "labels": MANAGED},
        "spec": {
            "nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            "nodeTaints": [GPU_TAINT],
            "tolerations": [GPU_TOLERATION],
        },
    },
}
COHORTS = {
    "gpu-pool": {
        "apiVersion": V1BETA2,
        "kind": "Cohort",
        "metadata": {"name": "gpu-pool", "labels": MANAGED},
        "spec": {},
    },
    "research-division": {
        "apiVersion": V1BETA2,
        "kind": "Cohort",
        "metadata": {"name": "research-division", "labels": MANAGED},
        "spec": {"parentName": "gpu-pool", "fairSharing": {"weight": "2"}},
    },
    "product-division": {
        "apiVersion": V1BETA2,
        "kind": "Cohort",
        "metadata": {"name": "product-division", "labels": MANAGED},
        "spec": {"parentName": "gpu-pool", "fairSharing": {"weight": "1"}},
    },
    "reserve": {
        "apiVersion": V1BETA2,
        "kind": "Cohort",
        "metadata": {"name": "reserve", "labels": MANAGED},
        "spec": {
            "parentName": "gpu-pool",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "96"},
                                {"name": "memory", "nominalQuota": "1Ti"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "4"},
                            ],
                        }
                    ],
                }
            ],
        },
    },
}


def test_components_register_the_kueue_objects_of_the_stack_file():
    _, run = built("prod")
    assert run.one("ClusterQueue", "research-cq").inputs == RESEARCH_CQ
    (lq,) = [
        r.inputs
        for r in run.of_kind("LocalQueue")
        if r.inputs["metadata"]["namespace"] == "team-research"
    ]
    assert lq == RESEARCH_LQ
    for name, expected in FLAVORS.items():
        registered = copy.deepcopy(run.one("ResourceFlavor", name).inputs)
        # the capacity annotation: test_flavors_carry_the_capacity_their_nodes_give
        assert set(registered["metadata"].pop("annotations")) == {CAPACITY_ANNOTATION}
        assert registered == expected
    for name, expected in COHORTS.items():
        assert run.one("Cohort", name).inputs == expected
    assert len(run.of_kind("Cohort")) == len(COHORTS)
    assert sorted(r.inputs["metadata"]["name"] for r in run.of_kind("ClusterQueue")) == [
        "nlp-cq",
        "research-cq",
        "vision-cq",
    ]
    assert sorted(r.inputs["metadata"]["name"] for r in run.of_kind("ResourceFlavor")) == [
        "a100",
        "h100",
    ]


def test_flavors_carry_the_capacity_their_nodes_give():
    _, run = built("prod")
    annotations = run.one("ResourceFlavor", "h100").inputs["metadata"]["annotations"]
    assert json.loads(annotations[CAPACITY_ANNOTATION]) == {
        "cpu": "768",
        "memory": "8Ti",
        "nvidia.com/gpu": "32",
    }


def test_the_pack_checks_quotas_against_the_capacity_the_program_declares():
    _, run = built("prod")
    stack = resources(run)
    kueue = [(t, n, p) for t, n, p in stack if t in (CQ, RF, COHORT)]
    assert run_policy(rules.QUOTA_WITHIN_CAPACITY, stack_args(kueue)) == []
    # One more H100 GPU in one queue than the flavor's 4 nodes hold (with the reserve's 4).
    grown = copy.deepcopy(kueue)
    for typ, _, props in grown:
        if typ == CQ and props["metadata"]["name"] == "research-cq":
            h100 = props["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
            h100[2]["nominalQuota"] = "17"
    [message] = run_policy(rules.QUOTA_WITHIN_CAPACITY, stack_args(grown))
    assert "nominal quotas of nvidia.com/gpu in flavor 'h100' add up to 33" in message
    assert f"above the declared capacity 32 (from ResourceFlavor h100's {CAPACITY_ANNOTATION}" in (
        message
    )
    # Without the annotation the program writes, the pack has nothing to compare with.
    for typ, _, props in grown:
        if typ == RF:
            del props["metadata"]["annotations"]
    assert run_policy(rules.QUOTA_WITHIN_CAPACITY, stack_args(grown)) == []


def test_a_stack_with_metrics_on_passes_the_strict_pack():
    """kueue.metrics adds a ServiceMonitor, a ServiceAccount, its token Secret, a
    ClusterRoleBinding and a ConfigMap: none of them may trip a rule. (Built without
    `validate`, which would ask a cluster for the ServiceMonitor CRD: tests/e2e/test_metrics.py.)"""
    from gpu_queues.config.model import load_config

    raw = with_test_manifest(stack_raw("prod"))
    raw[keys.KEY_KUEUE]["metrics"] = {
        "serviceMonitor": {"enabled": True},
        "dashboard": {"enabled": True},
    }
    config = load_config(raw)
    run = run_stack(
        config, load_manifest(config.kueue), verified_sha256=config.kueue.manifest.sha256
    )
    assert run.of_kind("ServiceMonitor")
    found = Analyzer(PACK_DIR / "config" / "prod.json").preview(resources(run))
    assert [d.message for d in mandatory(found)] == []
