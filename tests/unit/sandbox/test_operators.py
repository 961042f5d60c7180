"""sandbox/operators.py without a cluster: the one Configuration every operator's controller
manager is given in the sandbox, and the ports that keep the operators apart."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import jobset, lws
from sandbox.operators import Operator
from sandbox.topology import Cluster

pytestmark = pytest.mark.unit

CLUSTER = Cluster("c", "127.0.0.2", "10.245.0.0/16", Path("/x"), "s", Path("/x/s.yaml"))


@pytest.mark.parametrize(
    ("operator", "api_version", "webhook", "health"),
    [
        (jobset.OPERATOR, "config.jobset.x-k8s.io/v1alpha1", 9444, 8181),
        (lws.OPERATOR, "config.lws.x-k8s.io/v1alpha1", 9445, 8182),
    ],
    ids=["jobset", "lws"],
)
def test_the_manager_binds_the_cluster_address_only_and_rotates_no_certs(
    operator: Operator, api_version: str, webhook: int, health: int
) -> None:
    cfg = operator.configuration(CLUSTER, Path("/certs"))
    assert cfg["apiVersion"] == api_version
    assert cfg["kind"] == "Configuration"
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["webhook"] == {"port": webhook, "host": "127.0.0.2", "certDir": "/certs"}
    assert cfg["health"] == {"healthProbeBindAddress": f"127.0.0.2:{health}"}
    assert cfg["metrics"] == {"bindAddress": "0"}  # off


def test_jobset_and_lws_listen_on_ports_of_their_own() -> None:
    taken = {9443, 8081, jobset.WEBHOOK_PORT, jobset.HEALTH_PORT}  # Kueue's, JobSet's
    assert not {lws.WEBHOOK_PORT, lws.HEALTH_PORT} & taken
