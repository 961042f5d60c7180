"""The provisioning rules on hand-written objects in the shape Kueue v1beta2 documents
(apis/kueue/v1beta2/provisioningrequestconfig_types.go, v0.18.3): what the
ProvisioningRequestConfig CRD refuses, what the provisioning controller cannot load
(BadParametersRef), the v0.18 ClusterQueue webhook's onFlavors rule, and Kueue's refusal of a
queue with both a MultiKueue and a provisioning check. Each case pins the whole error."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue.clusterqueue import cluster_queue_errors
from gpu_queues.kueue.errors import UNKNOWN, FieldError
from gpu_queues.kueue.provisioning import (
    missing_provisioning_config,
    provisioning_check_errors,
    provisioning_request_config_errors,
    provisioning_with_multikueue,
)
from tests.builders import ClusterQueue, FlavorQuotas

pytestmark = pytest.mark.unit

CHECKS = "spec.admissionChecksStrategy.admissionChecks"


def found(errors: list[FieldError]) -> list[tuple[str, str, str, str]]:
    return [(e.where, e.message, e.fix, e.code) for e in errors]


def prc(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "autoscale"},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", **spec},
    }


def check(parameters: Any, controller: str = "kueue.x-k8s.io/provisioning-request") -> dict:
    spec: dict[str, Any] = {"controllerName": controller}
    if parameters is not None:
        spec["parameters"] = parameters
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "spec": spec}


def test_the_documented_example_config_passes() -> None:
    # Kueue's site example (admission-check-controllers/provisioning), with every field.
    good = prc(
        parameters={"BookingExpirationSeconds": "600"},
        managedResources=["nvidia.com/gpu"],
        retryStrategy={"backoffLimitCount": 2, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
        podSetUpdates={
            "nodeSelector": [
                {
                    "key": "autoscaling.cloud-provider.com/provisioning-request",
                    "valueFromProvisioningClassDetail": "RequestName",
                }
            ]
        },
        podSetMergePolicy="IdenticalWorkloadSchedulingRequirements",
    )
    assert provisioning_request_config_errors(good) == []


def test_a_class_name_that_is_no_dns_subdomain_or_unset_is_refused() -> None:
    assert found(
        provisioning_request_config_errors(prc(provisioningClassName="Check_Capacity"))
    ) == [
        (
            "spec.provisioningClassName",
            "provisioningClassName 'Check_Capacity' is not a DNS subdomain of at most 253 "
            "characters",
            "write a class such as check-capacity.autoscaling.x-k8s.io",
            "provisioning-class",
        )
    ]
    assert found(provisioning_request_config_errors(prc(provisioningClassName=""))) == [
        (
            "spec.provisioningClassName",
            "provisioningClassName is not set",
            "name the autoscaler's provisioning class",
            "provisioning-class",
        )
    ]
    assert provisioning_request_config_errors(prc(provisioningClassName=UNKNOWN)) == []


def test_parameters_stop_at_100_entries_of_255_characters() -> None:
    assert (
        provisioning_request_config_errors(prc(parameters={f"k{i}": "v" for i in range(100)})) == []
    )
    assert found(
        provisioning_request_config_errors(prc(parameters={f"k{i}": "v" for i in range(101)}))
    ) == [
        (
            "spec.parameters",
            "parameters has 101 entries",
            "keep it to at most 100",
            "provisioning-parameters",
        )
    ]
    assert provisioning_request_config_errors(prc(parameters={"a": "x" * 255})) == []
    assert found(provisioning_request_config_errors(prc(parameters={"a": "x" * 256, "b": 3}))) == [
        (
            "spec.parameters.a",
            "parameter 'a' has 256 characters",
            "keep it to at most 255",
            "provisioning-parameters",
        ),
        (
            "spec.parameters.b",
            "parameter 'b' is not a string",
            "quote the value",
            "provisioning-parameters",
        ),
    ]


def test_managed_resources_are_a_set_of_at_most_100_resource_names() -> None:
    assert found(
        provisioning_request_config_errors(
            prc(managedResources=["nvidia.com/gpu", "nvidia.com/gpu", "no way"])
        )
    ) == [
        (
            "spec.managedResources[1]",
            "managedResources lists 'nvidia.com/gpu' twice (it is a set)",
            "list each resource once",
            "managed-resources",
        ),
        (
            "spec.managedResources[2]",
            "managedResources[2] ('no way') is not a resource name",
            "write a resource such as nvidia.com/gpu",
            "managed-resources",
        ),
    ]
    hundred = [f"example.com/r{i}" for i in range(100)]
    assert provisioning_request_config_errors(prc(managedResources=hundred)) == []
    assert found(provisioning_request_config_errors(prc(managedResources=[*hundred, "cpu"]))) == [
        (
            "spec.managedResources",
            "managedResources has 101 entries",
            "list between 0 and 100 resources",
            "list-size",
        )
    ]


@pytest.mark.parametrize("value", [-1, 2**31, 1.5, True, "3"])
def test_retry_fields_are_int32_of_zero_or_more(value: Any) -> None:
    assert found(
        provisioning_request_config_errors(prc(retryStrategy={"backoffLimitCount": value}))
    ) == [
        (
            "spec.retryStrategy.backoffLimitCount",
            f"backoffLimitCount is {value!r}, not a whole number of 0 or more (int32)",
            "write a whole number such as 3",
            "retry-strategy",
        )
    ]


def test_retry_bounds_pass() -> None:
    ok = {"backoffLimitCount": 0, "backoffBaseSeconds": 2**31 - 1, "backoffMaxSeconds": 2**31 - 1}
    assert provisioning_request_config_errors(prc(retryStrategy=ok)) == []


def test_node_selector_updates_are_a_map_of_at_most_8_label_keys() -> None:
    def sel(key: Any, detail: Any = "d") -> dict[str, Any]:
        return {"key": key, "valueFromProvisioningClassDetail": detail}

    bad = prc(podSetUpdates={"nodeSelector": [sel("a/b"), sel("a/b"), sel("-x"), sel("ok", "")]})
    assert found(provisioning_request_config_errors(bad)) == [
        (
            "spec.podSetUpdates.nodeSelector[1].key",
            "nodeSelector lists key 'a/b' twice (a map keyed by key)",
            "list each key once",
            "pod-set-updates",
        ),
        (
            "spec.podSetUpdates.nodeSelector[2].key",
            "nodeSelector key '-x' is not a label key",
            "write a label key such as cloud.example.com/reservation",
            "pod-set-updates",
        ),
        (
            "spec.podSetUpdates.nodeSelector[3].valueFromProvisioningClassDetail",
            "valueFromProvisioningClassDetail is not set",
            "name the provisioningClassDetails key the value comes from",
            "pod-set-updates",
        ),
    ]
    nine = prc(podSetUpdates={"nodeSelector": [sel(f"k{i}") for i in range(9)]})
    assert found(provisioning_request_config_errors(nine)) == [
        (
            "spec.podSetUpdates.nodeSelector",
            "nodeSelector has 9 entries",
            "list between 0 and 8 selectors",
            "list-size",
        )
    ]


def test_a_merge_policy_outside_the_enum_is_refused() -> None:
    assert found(provisioning_request_config_errors(prc(podSetMergePolicy="Merge"))) == [
        (
            "spec.podSetMergePolicy",
            "podSetMergePolicy 'Merge' is not one of IdenticalPodTemplates, "
            "IdenticalWorkloadSchedulingRequirements",
            "pick one of them, or leave it unset",
            "enum",
        )
    ]


BAD_REF = (
    "spec.parameters",
    "a provisioning admission check needs parameters naming a ProvisioningRequestConfig "
    "(apiGroup kueue.x-k8s.io); without them Kueue keeps it inactive (BadParametersRef)",
    "set parameters: {apiGroup: kueue.x-k8s.io, kind: ProvisioningRequestConfig, name: ...}",
    "provisioning-config-reference",
)


def test_a_provisioning_check_must_name_a_kueue_provisioning_request_config() -> None:
    ok = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "autoscale"}
    assert provisioning_check_errors(check(ok)) == []
    assert found(provisioning_check_errors(check(None))) == [BAD_REF]
    assert found(provisioning_check_errors(check({**ok, "kind": "MultiKueueConfig"}))) == [BAD_REF]
    assert found(provisioning_check_errors(check({**ok, "apiGroup": "example.com"}))) == [BAD_REF]
    assert provisioning_check_errors(check({**ok, "kind": UNKNOWN})) == []
    # Another controller's check is not this rule's business.
    assert provisioning_check_errors(check(None, "kueue.x-k8s.io/multikueue")) == []


def test_a_provisioning_check_naming_an_undeclared_config_is_reported() -> None:
    ref = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "gone"}
    assert missing_provisioning_config(check(ref), {"gone"}) == []
    assert found(missing_provisioning_config(check(ref), {"b", "a"})) == [
        (
            "spec.parameters.name",
            "ProvisioningRequestConfig 'gone' is not declared (declared: a, b), so Kueue keeps "
            "the admission check inactive and its queues admit nothing",
            "declare the ProvisioningRequestConfig, or fix the name",
            "provisioning-config-undeclared",
        )
    ]


def queue(*checks: Any, flavors: tuple[str, ...] = ("gpu", "cpu-only")) -> dict[str, Any]:
    built = ClusterQueue("ml").resource_group(*(FlavorQuotas(f).quotas(cpu=1) for f in flavors))
    return built.spec(admissionChecksStrategy={"admissionChecks": list(checks)}).obj()


def test_on_flavors_must_be_flavors_of_the_queues_quota() -> None:
    # Kueue v0.18 ClusterQueue webhook: field.NotSupported for an onFlavors flavor outside
    # the resource groups.
    assert cluster_queue_errors(queue({"name": "a", "onFlavors": ["gpu", "cpu-only"]})) == []
    assert found(cluster_queue_errors(queue({"name": "a", "onFlavors": ["gpu", "tpu"]}))) == [
        (
            f"{CHECKS}[0].onFlavors[1]",
            "onFlavors names flavor 'tpu', which is not in the queue's quota (its flavors: gpu, "
            "cpu-only), so Kueue refuses the ClusterQueue",
            "name a flavor the team has quota in",
            "check-flavor",
        )
    ]
    unknown = queue({"name": "a", "onFlavors": ["tpu"]}, flavors=(UNKNOWN,))  # type: ignore[arg-type]
    assert [e for e in cluster_queue_errors(unknown) if e.code == "check-flavor"] == []


def test_a_queue_with_a_multikueue_and_a_provisioning_check_is_refused() -> None:
    cq = queue({"name": "multikueue-ml"}, {"name": "autoscale"}, {"name": "other"})
    assert found(provisioning_with_multikueue(cq, {"multikueue-ml"}, {"autoscale"})) == [
        (
            f"{CHECKS}[1]",
            "provisioning admission check 'autoscale' is on a queue that dispatches through "
            "MultiKueue (multikueue-ml); Kueue cannot use both MultiKueue and ProvisioningRequest "
            "AdmissionChecks together and would mark the queue inactive",
            "put the provisioning check on the worker clusters' stacks, where the jobs run",
            "provisioning-with-multikueue",
        )
    ]
    assert provisioning_with_multikueue(cq, set(), {"autoscale"}) == []
    assert provisioning_with_multikueue(cq, {"multikueue-ml"}, set()) == []
