"""The dev stack reproduces the seed walkthrough's objects exactly."""

from __future__ import annotations

import re

import pytest
import yaml

from gpu_queues import keys
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

PINS = ROOT / "toolchain" / "pins.env"


def test_dev_registers_the_seed_resource_flavor(dev_run):
    flavor = dev_run.one("ResourceFlavor", "gpu-flavor")
    assert flavor.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert "spec" not in flavor.inputs  # the seed's flavor has no spec
    assert len(dev_run.of_kind("ResourceFlavor")) == 1


def test_dev_registers_the_seed_cluster_queue(dev_run):
    cq = dev_run.one("ClusterQueue", "gpu-cluster-queue")
    assert cq.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq.inputs["spec"] == {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                "flavors": [
                    {
                        "name": "gpu-flavor",
                        "resources": [
                            {"name": "cpu", "nominalQuota": "64"},
                            {"name": "memory", "nominalQuota": "512Gi"},
                            {"name": "nvidia.com/gpu", "nominalQuota": "8"},
                        ],
                    }
                ],
            }
        ],
    }


def test_dev_registers_the_seed_local_queue(dev_run):
    lq = dev_run.one("LocalQueue", "gpu-queue")
    assert lq.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert lq.inputs["metadata"]["namespace"] == "default"
    assert lq.inputs["spec"] == {"clusterQueue": "gpu-cluster-queue"}


def test_dev_registers_the_seed_shared_claim(dev_run):
    pvc = dev_run.one("PersistentVolumeClaim", "shared-pvc")
    assert pvc.typ == "kubernetes:core/v1:PersistentVolumeClaim"
    assert pvc.inputs["metadata"]["namespace"] == "default"
    assert pvc.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == (
        "jsonpath={.status.phase}=Bound"
    )
    assert pvc.inputs["spec"] == {
        "accessModes": ["ReadWriteMany"],
        "storageClassName": "shared-wekafs",
        "volumeName": "shared-volume-dev",
        "resources": {"requests": {"storage": "100Gi"}},
    }


def test_dev_adopts_the_default_namespace_instead_of_creating_it(dev_run):
    created = [r for r in dev_run.resources if r.typ == "kubernetes:core/v1:Namespace"]
    assert [r.inputs["metadata"]["name"] for r in created] == ["kueue-system"]
    patches = [r for r in dev_run.resources if r.typ == "kubernetes:core/v1:NamespacePatch"]
    assert [p.inputs["metadata"]["name"] for p in patches] == ["default"]


def test_dev_has_no_rbac_and_no_cohort(dev_run):
    assert not dev_run.of_kind("Role")
    assert not dev_run.of_kind("RoleBinding")
    assert not dev_run.of_kind("Cohort")


def test_dev_outputs(dev_run):
    out = dev_run.outputs
    # dev sets no version: the pin in toolchain/pins.env, read here on its own
    dev = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())["config"]
    assert "version" not in dev["gpu-queues:kueue"]
    (pinned,) = re.findall(r"^KUEUE_VERSION=(\S+)$", PINS.read_text(), re.M)
    assert out[keys.OUT_KUEUE_VERSION] == pinned
    assert out[keys.OUT_CLUSTER_QUEUES] == {"ml": "gpu-cluster-queue"}
    assert out[keys.OUT_LOCAL_QUEUES] == {"ml": "default/gpu-queue"}
    assert out[keys.OUT_FLAVORS] == ["gpu-flavor"]
    assert out[keys.OUT_SHARED_CLAIMS] == ["default/shared-pvc"]


def test_every_kubernetes_resource_uses_the_explicit_provider(dev_run):
    k8s = [r for r in dev_run.resources if r.typ.startswith("kubernetes:")]
    assert k8s
    for resource in k8s:
        assert resource.provider and "gpu-queues-k8s" in resource.provider, resource.name


def test_provider_uses_server_side_apply(dev_run):
    provider = [r for r in dev_run.resources if r.typ == "pulumi:providers:kubernetes"]
    assert len(provider) == 1
    assert provider[0].inputs["enableServerSideApply"] in (True, "true")
    # The manager ConfigMap is updated in place (an upgrade changes it): replacing it would
    # delete it while a new controller pod may be starting (tests/e2e/test_upgrade.py).
    assert provider[0].inputs["enableConfigMapMutable"] in (True, "true")


def test_kueue_objects_wait_for_the_readiness_probe(dev_run):
    assert len(dev_run.probes) == 1
    _, _, timeout = dev_run.probes[0]
    assert timeout == 300.0


def test_shared_claim_is_protected_unless_config_allows_destroy(dev_raw):
    import pulumi

    from gpu_queues.components.storage import SharedStorage, SharedStorageArgs
    from gpu_queues.config.model import load_config
    from tests.conftest import MockRun, mocks_for

    protected = load_config(dev_raw).shared_storage[0]
    allowed = protected.model_copy(update={"allow_destroy": True, "claim_name": "scratch"})
    pulumi.runtime.set_mocks(mocks_for(MockRun()), project="gpu-queues", stack="unit")
    seen = {}

    @pulumi.runtime.test
    def program():
        storage = SharedStorage("s", SharedStorageArgs([protected, allowed]))
        seen.update({ref: claim._protect for ref, claim in storage.claims.items()})
        return storage.claim_refs

    program()
    assert seen == {"default/shared-pvc": True, "default/scratch": False}
