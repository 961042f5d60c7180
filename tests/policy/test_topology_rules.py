"""The pack's topology rules (issue 26, part 1) on hand-written v1beta2 Topologies and
ResourceFlavors, through faithful Resource and StackValidationArgs."""

import pytest
from policy_harness import UNKNOWN, resource_args, run_policy, stack_args

from policies import rules
from tests.builders import ResourceFlavor, Topology

pytestmark = pytest.mark.policy

TOPO = "kubernetes:kueue.x-k8s.io/v1beta2:Topology"
RF = "kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"


def topology(name, *labels):
    return Topology(name).levels(*labels).obj()


def tas_flavor(topology_name):
    return ResourceFlavor("tas-gpu").labels({"pool": "tas"}).topology(topology_name).obj()


DEFAULT = topology("default", "cloud.provider.com/topology-rack", "kubernetes.io/hostname")


def test_a_valid_topology_passes_and_hostname_above_a_rack_is_rejected():
    assert run_policy(rules.TOPOLOGY_WEBHOOK_VALID, resource_args(TOPO, DEFAULT)) == []
    bad = topology("default", "kubernetes.io/hostname", "cloud.provider.com/topology-rack")
    [message] = run_policy(rules.TOPOLOGY_WEBHOOK_VALID, resource_args(TOPO, bad))
    assert message.startswith('[topology-webhook-valid] Topology "default"')
    assert "spec.levels[0].nodeLabel: kubernetes.io/hostname is level 0 of 2" in message


def test_a_flavor_naming_its_stacks_topology_passes():
    resources = [(TOPO, "t", DEFAULT), (RF, "rf", tas_flavor("default"))]
    assert run_policy(rules.FLAVOR_TOPOLOGY_EXISTS, stack_args(resources)) == []


def test_a_flavor_naming_a_missing_topology_is_rejected_unless_pre_existing():
    resources = [(TOPO, "t", DEFAULT), (RF, "rf", tas_flavor("racks"))]
    [message] = run_policy(rules.FLAVOR_TOPOLOGY_EXISTS, stack_args(resources))
    assert message.startswith('[resourceflavor-topology-exists] ResourceFlavor "tas-gpu"')
    assert "Topology 'racks' does not exist" in message and "TopologyNotFound" in message
    config = {"preExistingTopologies": ["racks"]}
    assert run_policy(rules.FLAVOR_TOPOLOGY_EXISTS, stack_args(resources, config)) == []


def test_unknown_topology_names_wait_for_the_update():
    resources = [(TOPO, "t", topology(UNKNOWN, "x/y")), (RF, "rf", tas_flavor("racks"))]
    assert run_policy(rules.FLAVOR_TOPOLOGY_EXISTS, stack_args(resources)) == []
