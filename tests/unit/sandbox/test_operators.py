"""sandbox/operators.py without a cluster: when the sandbox runs each operator beside Kueue
(the stack's Kueue runs its integration), the one Configuration every operator's controller
manager is given there, and the ports that keep the operators apart."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gpu_queues.config.model import Integrations, StackConfig
from sandbox import jobset, lws, operators
from sandbox import shape as fake_cluster
from sandbox.operators import Operator
from sandbox.topology import Cluster
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

CLUSTER = Cluster("c", "127.0.0.2", "10.245.0.0/16", Path("/x"), "s", Path("/x/s.yaml"))


def local_with(frameworks: list[str]) -> StackConfig:
    """The local stack with its Kueue running the integrations `frameworks` only."""
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    manager = config.kueue.manager.model_copy(
        update={"integrations": Integrations(frameworks=frameworks)}
    )
    return config.model_copy(update={"kueue": config.kueue.model_copy(update={"manager": manager})})


# Each operator's module, and the other's: a stack may run one integration and not the other.
OPERATORS = pytest.mark.parametrize(
    ("operator", "other"), [(jobset, lws), (lws, jobset)], ids=["jobset", "lws"]
)


@OPERATORS
def test_the_local_stack_runs_the_operator_as_the_release_default_enables_it(
    operator: ModuleType, other: ModuleType
) -> None:
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    assert config.kueue.manager.integrations is None  # the release's default Configuration
    assert operator.wanted(config)


@OPERATORS
def test_a_stack_without_the_integration_runs_no_controller_of_it(
    operator: ModuleType, other: ModuleType
) -> None:
    without = local_with(["batch/job", other.FRAMEWORK])
    assert not operator.wanted(without)
    assert other.wanted(without)


@OPERATORS
def test_a_multikueue_manager_listing_no_integrations_runs_none_as_the_program_limits_it(
    operator: ModuleType, other: ModuleType
) -> None:
    manager = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-manager.yaml")
    worker = fake_cluster.load_stack(ROOT / "tests/e2e/stacks/Pulumi.local-mk-worker-a.yaml")
    assert manager.kueue.manager.integrations is None
    assert not operator.wanted(manager)  # batch/job only (effective_kueue)
    assert operator.wanted(worker)  # a worker keeps the release default


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


def test_crds_are_applied_in_one_call_and_waited_for_until_every_one_is_established(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """install_crds polls: not there yet, there but not Established, one of two Established,
    then both; kubectl's answer for one name is the CRD itself, for several a List."""
    calls: list[tuple[str, ...]] = []

    def crd(name: str, established: str | None) -> dict[str, Any]:
        conditions = [{"type": "NamesAccepted", "status": "True"}]
        if established:
            conditions.append({"type": "Established", "status": established})
        return {"kind": "CustomResourceDefinition", "metadata": {"name": name},
                "status": {"conditions": conditions}}  # fmt: skip

    answers = iter([
        RuntimeError('crds "b.x" not found'),
        {"kind": "List", "items": [crd("a.x", "False"), {"metadata": {"name": "b.x"}}]},
        {"kind": "List", "items": [crd("a.x", "True"), crd("b.x", None)]},
        {"kind": "List", "items": [crd("a.x", "True"), crd("b.x", "True")]},
        crd("c.x", "False"),
        crd("c.x", "True"),
    ])  # fmt: skip

    def kubectl(*args: str, kubeconfig: Path) -> str:
        calls.append(args)
        if args[0] == "apply":
            return ""
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return json.dumps(answer)

    monkeypatch.setattr(operators, "kubectl", kubectl)
    monkeypatch.setattr(operators, "wait_for", lambda what, check: _poll(check))
    operators.install_crds(CLUSTER, [Path("/m/a.yaml"), Path("/m/b.yaml")], ["a.x", "b.x"])
    assert calls[0] == ("apply", "--server-side", "-f", "/m/a.yaml", "-f", "/m/b.yaml")
    assert calls[1:] == [("get", "crd", "a.x", "b.x", "-o", "json")] * 4
    calls.clear()
    operators.install_crds(CLUSTER, [Path("/m/c.yaml")], ["c.x"])
    assert (
        calls
        == [("apply", "--server-side", "-f", "/m/c.yaml")]
        + [("get", "crd", "c.x", "-o", "json")] * 2
    )
    assert next(answers, None) is None  # every answer was asked for


def _poll(check: Callable[[], bool]) -> None:
    """procs.wait_for without its clock: a check that raises is asked again, as there."""
    for _ in range(10):
        try:
            if check():
                return
        except RuntimeError:
            pass
    raise AssertionError("never true")
