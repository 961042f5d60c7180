"""The sandbox's topologies and how several Kueues share its one network namespace: each
cluster on an address and pod range of its own, each Kueue bound to its own pod's IP."""

from __future__ import annotations

import ipaddress
import itertools

import pytest
import yaml

from sandbox import topology
from sandbox.kueue_pod import bind_to_pod_ip
from sandbox.paths import KUBECONFIG, STATE

pytestmark = pytest.mark.unit

# The release's Configuration as Kueue v0.18.3 ships it (config/components/manager), shortened.
RELEASE_CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8443
webhook:
  port: 9443
leaderElection:
  leaderElect: true
integrations:
  frameworks: [batch/job]
"""


def test_the_single_topology_is_the_sandbox_as_it_always_was() -> None:
    (only,) = topology.clusters(topology.SINGLE)
    assert only.primary and only.kubeconfig == KUBECONFIG and only.pki == STATE / "pki"
    assert only.apiserver == "https://127.0.0.1:6443" and only.pod_range == "10.244.0.0/16"
    assert only.process("kube-apiserver") == "kube-apiserver"
    assert only.node_ip == "10.244.255.254"


def test_multikueue_clusters_never_share_an_address_a_pod_range_or_a_directory() -> None:
    clusters = topology.clusters(topology.MULTIKUEUE)
    assert [c.name for c in clusters] == ["manager", "worker-a", "worker-b"]
    assert [c.primary for c in clusters] == [True, False, False]
    assert not clusters[0].gpu_nodes  # the manager's jobs run on its workers
    assert all(c.gpu_nodes for c in clusters[1:])
    for a, b in itertools.combinations(clusters, 2):
        assert a.address != b.address
        assert not ipaddress.ip_network(a.pod_range).overlaps(ipaddress.ip_network(b.pod_range))
        assert a.state != b.state and a.kubeconfig != b.kubeconfig
        assert a.process("etcd") != b.process("etcd")
    for c in clusters:
        assert ipaddress.ip_address(c.address).is_loopback
        assert ipaddress.ip_address(c.node_ip) in ipaddress.ip_network(c.pod_range)
        assert c.shape.exists()


def test_a_worker_stack_deploys_to_its_worker_and_any_other_stack_to_the_primary() -> None:
    for name, stack in topology.MK_WORKER_STACKS.items():
        assert topology.cluster_of_stack(stack).name == name
    assert topology.cluster_of_stack(topology.MK_MANAGER_STACK).primary
    assert topology.cluster_of_stack("some-stack-never-seen").primary


def test_an_unknown_topology_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unknown sandbox topology 'triple'.*multikueue"):
        topology.clusters("triple")


def test_every_server_kueue_opens_is_bound_to_the_pod_ip_on_its_port() -> None:
    bound = yaml.safe_load(bind_to_pod_ip(RELEASE_CONFIG, "10.245.0.7"))
    assert bound["webhook"] == {"port": 9443, "host": "10.245.0.7"}
    assert bound["health"]["healthProbeBindAddress"] == "10.245.0.7:8081"
    assert bound["metrics"]["bindAddress"] == "10.245.0.7:8443"
    assert bound["visibilityServer"]["bindAddress"] == "10.245.0.7"
    # Everything else is the release's.
    assert bound["leaderElection"] == {"leaderElect": True}
    assert bound["integrations"] == {"frameworks": ["batch/job"]}


def test_configured_ports_are_kept_and_a_switched_off_metrics_server_stays_off() -> None:
    text = RELEASE_CONFIG.replace(":8081", "0.0.0.0:18081").replace(":8443", "0")
    text += "pprofBindAddress: :6060\n"
    bound = yaml.safe_load(bind_to_pod_ip(text, "10.246.0.1"))
    assert bound["health"]["healthProbeBindAddress"] == "10.246.0.1:18081"
    assert str(bound["metrics"]["bindAddress"]) == "0"
    assert bound["pprofBindAddress"] == "10.246.0.1:6060"


def test_text_that_is_not_a_configuration_is_left_alone() -> None:
    for text in ("", "- a list\n", "key: [unclosed\n"):
        assert bind_to_pod_ip(text, "10.244.0.1") == text
