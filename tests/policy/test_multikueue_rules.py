"""The MultiKueue rules of the pack (admission checks that exist, one MultiKueue check per
queue, references from a check to its config, clusters and kubeconfig Secrets, and the
objects' own fields), and the MultiKueue manager sandbox stack through the whole pack."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from policy_harness import (
    CQ,
    RF,
    Analyzer,
    cluster_queue,
    flavor,
    mandatory,
    run_policy,
    stack_args,
)

from gpu_queues.components.validation import validate
from gpu_queues.config import render
from gpu_queues.config.stackfile import read_config
from gpu_queues.kueue import multikueue as kueue_multikueue
from gpu_queues.release.manifest import load_manifest
from policies import rules
from tests.conftest import run_stack, stand_in
from tests.policy.test_program_through_pack import resources, with_test_manifest

pytestmark = pytest.mark.policy

AC = "kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck"
MKC = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueConfig"
MKCL = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster"
SECRET = "kubernetes:core/v1:Secret"
E2E = Path(__file__).resolve().parents[1] / "e2e" / "stacks"

MANAGER = {
    "teams": [{"name": "ml"}],
    "multiKueue": {
        "manager": {"workers": [{"name": "east"}, {"name": "west"}], "teams": [{"name": "ml"}]}
    },
}


def queue_with(*checks: dict[str, Any]) -> dict[str, Any]:
    cq = cluster_queue()
    cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": list(checks)}
    return cq


def secret(name: str, namespace: str = "kueue-system") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"kubeconfig": "c2VjcmV0"},
    }


def manager_stack() -> list[tuple[str, str, dict[str, Any]]]:
    """What a manager registers: the render the program uses, plus its Secrets."""
    found: list[tuple[str, str, dict[str, Any]]] = [
        (CQ, "cq", queue_with({"name": "multikueue-ml"})),
        (RF, "rf", flavor()),
    ]
    types = {"AdmissionCheck": AC, "MultiKueueConfig": MKC, "MultiKueueCluster": MKCL}
    for obj in render.multikueue_objects(MANAGER):
        found.append((types[obj["kind"]], obj["metadata"]["name"], obj))
    found += [(SECRET, s, secret(s)) for s in ("multikueue-east", "multikueue-west")]
    return found


def check(rule: str, stack: list[tuple[str, str, dict[str, Any]]], config: Any = None) -> list[str]:
    return run_policy(rule, stack_args(stack, config))


def test_a_manager_as_the_program_renders_it_passes_every_multikueue_rule() -> None:
    stack = manager_stack()
    assert check(rules.ADMISSION_CHECKS_EXIST, stack) == []
    assert check(rules.MULTIKUEUE_REFERENCES_EXIST, stack) == []
    found = Analyzer().preview(stack)
    assert [d.message for d in mandatory(found)] == []


def test_a_queue_naming_a_missing_admission_check_is_rejected() -> None:
    stack = [(CQ, "cq", queue_with({"name": "provisioning"}))]
    [message] = check(rules.ADMISSION_CHECKS_EXIST, stack)
    assert "[clusterqueue-admission-checks-exist]" in message
    assert "admission check 'provisioning' is not declared" in message
    assert "AdmissionCheckNotFound" in message and "preExistingAdmissionChecks" in message
    assert (
        check(rules.ADMISSION_CHECKS_EXIST, stack, {"preExistingAdmissionChecks": ["provisioning"]})
        == []
    )


def test_two_multikueue_checks_or_one_per_flavor_make_the_queue_inactive() -> None:
    stack = manager_stack()
    second = copy.deepcopy(next(p for t, _, p in stack if t == AC))
    second["metadata"]["name"] = "multikueue-other"
    stack.append((AC, "other", second))
    stack[0] = (CQ, "cq", queue_with({"name": "multikueue-ml"}, {"name": "multikueue-other"}))
    [message] = check(rules.ADMISSION_CHECKS_EXIST, stack)
    assert "2 MultiKueue admission checks" in message and "inactive" in message
    stack[0] = (CQ, "cq", queue_with({"name": "multikueue-ml", "onFlavors": ["gpu-flavor"]}))
    [message] = check(rules.ADMISSION_CHECKS_EXIST, stack)
    assert "limited to flavors gpu-flavor" in message


@pytest.mark.parametrize(
    ("drop", "expected"),
    [
        ("MultiKueueConfig", "MultiKueueConfig 'multikueue-ml' is not declared"),
        ("MultiKueueCluster", "MultiKueueCluster 'east' is not declared"),
        ("Secret", "Secret 'multikueue-east' is not declared in Kueue's namespace"),
    ],
)
def test_a_missing_link_from_check_to_kubeconfig_is_rejected(drop: str, expected: str) -> None:
    stack = [
        r
        for r in manager_stack()
        if not (
            r[2]["kind"] == drop
            and r[2]["metadata"]["name"] in ("multikueue-ml", "east", "multikueue-east")
        )
    ]
    found = check(rules.MULTIKUEUE_REFERENCES_EXIST, stack)
    assert any(expected in m for m in found), found
    assert all(m.startswith("[multikueue-references-exist]") for m in found)


def test_a_kubeconfig_secret_in_another_namespace_does_not_count() -> None:
    stack = [r for r in manager_stack() if r[1] != "multikueue-east"]
    stack.append((SECRET, "multikueue-east", secret("multikueue-east", "default")))
    [message] = check(rules.MULTIKUEUE_REFERENCES_EXIST, stack)
    assert "Secret 'multikueue-east'" in message
    config = {"preExistingKubeconfigSecrets": ["multikueue-east"]}
    assert check(rules.MULTIKUEUE_REFERENCES_EXIST, stack, config) == []


def test_a_secret_reaches_the_stack_rules_without_its_data() -> None:
    seen: list[Any] = []
    original = kueue_multikueue.missing_kubeconfig_secret

    def spy(cluster: Any, secrets: Any) -> Any:
        seen.append(secrets)
        return original(cluster, secrets)

    kueue_multikueue.missing_kubeconfig_secret = spy  # type: ignore[assignment]
    try:
        check(rules.MULTIKUEUE_REFERENCES_EXIST, manager_stack())
    finally:
        kueue_multikueue.missing_kubeconfig_secret = original  # type: ignore[assignment]
    assert seen and all("c2VjcmV0" not in repr(s) for s in seen)


@pytest.mark.parametrize(
    ("typ", "change", "expected"),
    [
        (AC, {"parameters": None}, "needs parameters naming a MultiKueueConfig"),
        (AC, {"parameters": {"apiGroup": "example.com", "kind": "X", "name": "x"}}, "BadConfig"),
        (MKC, {"clusters": []}, "clusters has 0 entries"),
        (MKC, {"clusters": ["east", "east"]}, "listed twice"),
        (MKCL, {"clusterSource": {}}, "exactly one of kubeConfig and clusterProfileRef"),
        (
            MKCL,
            {"clusterSource": {"kubeConfig": {"location": "/tmp/kc", "locationType": "Path"}}},
            "outside /etc/multikueue/kubeconfigs/",
        ),
        (
            MKCL,
            {"clusterSource": {"kubeConfig": {"location": "x", "locationType": "File"}}},
            "locationType is 'File'",
        ),
    ],
)
def test_fields_kueue_refuses_in_multikueue_objects_are_rejected(
    typ: str, change: dict[str, Any], expected: str
) -> None:
    obj = copy.deepcopy(next(p for t, _, p in manager_stack() if t == typ))
    obj["spec"].update(change)
    found = Analyzer().analyze(typ, obj)
    assert any(expected in d.message for d in mandatory(found)), [d.message for d in found]


def test_the_sandbox_manager_stack_passes_the_whole_pack() -> None:
    raw = with_test_manifest(read_config("local-mk-manager", E2E))
    config, _ = validate(raw, stack="local-mk-manager", project_dir=E2E, releases=stand_in())
    manifest = load_manifest(config.kueue) if config.kueue.install else None
    run = run_stack(config, manifest, verified_sha256=config.kueue.manifest.sha256)
    stack = resources(run)
    assert {t for t, _, _ in stack} >= {AC, MKC, MKCL, SECRET}
    assert [d.message for d in mandatory(Analyzer().preview(stack))] == []


# --- provisioning checks (docs/capacity-on-demand.md) ---------------------------------------

PRC = "kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig"
ON_DEMAND = {
    "checks": [
        {"name": "autoscale", "provisioningClassName": "check-capacity.autoscaling.x-k8s.io"}
    ],
    "teams": [{"name": "ml", "checks": [{"name": "autoscale"}]}],
}


def provisioning_stack() -> list[tuple[str, str, dict[str, Any]]]:
    """What a stack with a provisioning check registers: the program's render."""
    types = {"AdmissionCheck": AC, "ProvisioningRequestConfig": PRC}
    found: list[tuple[str, str, dict[str, Any]]] = [
        (CQ, "cq", queue_with({"name": "autoscale"})),
        (RF, "rf", flavor()),
    ]
    for obj in render.provisioning_objects({"provisioning": ON_DEMAND}):
        found.append((types[obj["kind"]], obj["metadata"]["name"], obj))
    return found


def test_a_provisioning_check_as_the_program_renders_it_passes_the_pack() -> None:
    stack = provisioning_stack()
    assert check(rules.ADMISSION_CHECKS_EXIST, stack) == []
    assert [d.message for d in mandatory(Analyzer().preview(stack))] == []


def test_a_provisioning_request_config_kueue_would_refuse_is_rejected() -> None:
    stack = provisioning_stack()
    prc = next(p for t, _, p in stack if t == PRC)
    prc["spec"]["provisioningClassName"] = "Not A Class"
    messages = [d.message for d in mandatory(Analyzer().preview(stack))]
    assert any(
        "[multikueue-webhook-valid]" in m and "provisioningClassName 'Not A Class'" in m
        for m in messages
    ), messages


def test_a_provisioning_check_without_its_config_reference_is_rejected() -> None:
    stack = provisioning_stack()
    ac = next(p for t, _, p in stack if t == AC)
    ac["spec"]["parameters"]["kind"] = "MultiKueueConfig"
    messages = [d.message for d in mandatory(Analyzer().preview(stack))]
    assert any("BadParametersRef" in m for m in messages), messages


def test_a_provisioning_check_beside_a_multikueue_check_makes_the_queue_inactive() -> None:
    stack = [r for r in manager_stack() if r[0] != CQ] + provisioning_stack()[2:]
    stack.append((CQ, "cq", queue_with({"name": "multikueue-ml"}, {"name": "autoscale"})))
    [message] = check(rules.ADMISSION_CHECKS_EXIST, stack)
    assert "[clusterqueue-admission-checks-exist]" in message
    assert (
        "provisioning admission check 'autoscale' is on a queue that dispatches through "
        "MultiKueue (multikueue-ml)" in message
    ), message
