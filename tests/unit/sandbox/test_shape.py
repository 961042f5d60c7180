"""The sandbox's simulated cloud, shaped like a stack (sandbox/shape.py): one fake node
per declared node, a system node for Kueue's controller, adopted namespaces, shared volumes,
and the record of which stack shaped a running sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.kueue.versions import supported
from gpu_queues.pins import read_pins
from gpu_queues.whatif import nodes as stack_nodes
from sandbox import kueue_pod
from sandbox import shape as fc
from tests.conftest import ROOT, stack_raw
from tests.rehearse.stackgen import rehearsal_stack, write_stack

pytestmark = pytest.mark.unit


def built(stack: str) -> list[dict[str, Any]]:
    return fc.objects(fc.load_stack(ROOT / f"Pulumi.{stack}.yaml"))


def kinds(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


def test_prod_gets_one_node_per_declared_node_with_the_flavors_labels_and_taints() -> None:
    nodes = kinds(built("prod"), "Node")
    assert sorted(nodes) == sorted(
        [*(f"h100-{i}" for i in range(4)), "a100-0", "a100-1", stack_nodes.SYSTEM_NODE]
    )
    h100 = nodes["h100-3"]
    assert h100["metadata"]["labels"]["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    assert h100["metadata"]["annotations"][stack_nodes.FLAVOR_ANNOTATION] == "h100"
    assert h100["spec"]["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    ]
    assert h100["status"]["allocatable"] == {
        "pods": "110",
        "cpu": "192",
        "memory": "2Ti",
        "nvidia.com/gpu": "8",
    }


def test_the_system_node_fits_the_kueue_controllers_placement() -> None:
    """prod places Kueue on node-role.kubernetes.io/system nodes and tolerates
    CriticalAddonsOnly: the system node has that label and taint, so jobs stay off it."""
    system = kinds(built("prod"), "Node")[stack_nodes.SYSTEM_NODE]
    assert system["metadata"]["labels"]["node-role.kubernetes.io/system"] == "true"
    assert system["spec"]["taints"] == [{"key": "CriticalAddonsOnly", "effect": "NoSchedule"}]
    assert stack_nodes.FLAVOR_ANNOTATION not in system["metadata"]["annotations"]
    # Room for both replicas' requests (500m, 1Gi) twice over: the default 16 cpu, 64Gi.
    assert system["status"]["allocatable"]["cpu"] == "16"


def test_a_controller_asking_for_more_gets_a_bigger_system_node() -> None:
    raw = stack_raw("prod")
    raw["kueue"]["controller"]["resources"]["requests"] = {"cpu": "6", "memory": "40Gi"}
    system = stack_nodes.system_node(load_config(raw))
    assert system["status"]["allocatable"]["cpu"] == "24"  # 6 x 2 replicas x 2
    assert system["status"]["allocatable"]["memory"] == "160Gi"


def test_local_keeps_its_single_node_and_its_volume() -> None:
    objs = built("local")
    nodes = kinds(objs, "Node")
    assert sorted(nodes) == ["gpu-flavor-0", stack_nodes.SYSTEM_NODE]
    assert (
        "spec" not in nodes[stack_nodes.SYSTEM_NODE] or not nodes[stack_nodes.SYSTEM_NODE]["spec"]
    )
    assert list(kinds(objs, "PersistentVolume")) == ["shared-volume-local"]
    assert list(kinds(objs, "StorageClass")) == ["shared-wekafs"]
    # `default` always exists: the cloud does not create it.
    assert kinds(objs, "Namespace") == {}


def test_adopted_namespaces_exist_before_the_stack_runs(tmp_path: Path) -> None:
    raw = rehearsal_stack(3, True)
    raw["teams"][0]["adoptNamespace"] = True
    cfg = load_config(raw)
    assert raw["teams"][0]["namespace"] in kinds(fc.objects(cfg), "Namespace")


def test_every_namespace_of_an_adopting_team_exists_before_the_stack_runs() -> None:
    raw = stack_raw("staging")  # research owns team-research and team-research-eval
    raw["teams"][0]["adoptNamespace"] = True
    namespaces = kinds(fc.objects(load_config(raw)), "Namespace")
    assert sorted(namespaces) == ["team-research", "team-research-eval"]


def test_a_totals_only_flavor_is_one_node_holding_the_totals() -> None:
    raw = stack_raw("dev")
    nodes = kinds(fc.objects(load_config(raw)), "Node")
    assert nodes["gpu-flavor-0"]["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_flavor_labels_win_over_the_default_node_labels() -> None:
    raw = stack_raw("prod")
    raw["flavors"][0]["nodeLabels"] = {"type": "gpu", "kubernetes.io/arch": "arm64"}
    node = stack_nodes.flavor_nodes(load_config(raw))[0]
    assert node["metadata"]["labels"]["type"] == "gpu"
    assert node["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"


def test_a_flavor_named_like_the_system_node_is_refused() -> None:
    raw = stack_raw("prod")
    raw["flavors"][0]["name"] = "sandbox-system"
    for owner in [*raw["teams"], *raw["cohorts"]]:  # a division's own pool too
        for group in owner.get("resourceGroups", []):
            group["flavors"][0]["name"] = "sandbox-system"
    with pytest.raises(stack_nodes.NodeNameClash, match="node names clash: sandbox-system-0"):
        stack_nodes.nodes(load_config(raw))


def test_a_stack_on_an_unsupported_kueue_release_is_refused() -> None:
    raw = stack_raw("prod")
    raw["kueue"]["version"] = "v0.17.0"
    with pytest.raises(fc.ShapeError, match=r"runs Kueue v0\.17\.0: .*not a release this"):
        fc.shape_of("prod", ROOT / "Pulumi.prod.yaml", load_config(raw))


def test_a_stack_ahead_of_the_pin_shapes_a_sandbox_at_its_own_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stack that sets its own supported kueue.version (ahead of, or behind, the pin) is
    rehearsed at that release: the sandbox runs the binary of the manifest's image tag."""
    pinned = read_pins()["KUEUE_VERSION"]
    other = next(v for v in reversed(supported()) if v != pinned)
    raw = stack_raw("staging")
    raw["kueue"] = {"version": other}
    path = write_stack(raw, tmp_path, "canary")
    shape = fc.shape_of("canary", path, fc.load_stack(path))
    assert shape.kueue_version == other
    assert shape.describe().endswith(f"Kueue {other}")
    # `sandbox.sh up` checks on the host, before anything starts, that its binary is linked.
    monkeypatch.setattr(kueue_pod, "BIN", tmp_path / "bin")
    assert fc.main(["check", "canary", str(path)]) == 1
    said = capsys.readouterr().err
    assert f"bin/kueue-{other} is missing: `make toolchain`" in said, said
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / f"kueue-{other}").write_text("")
    assert fc.main(["check", "canary", str(path)]) == 0
    assert f"Kueue {other}" in capsys.readouterr().out


def test_an_invalid_stack_file_is_refused_naming_the_problem(tmp_path: Path) -> None:
    raw = stack_raw("prod")
    raw["teams"][0]["namespace"] = "kube-system"
    path = write_stack(raw, tmp_path, "bad")
    with pytest.raises(fc.ShapeError, match=r"teams\[0\]\.namespace"):
        fc.load_stack(path)


def test_unknown_stacks_and_bad_names_are_refused() -> None:
    with pytest.raises(fc.ShapeError, match=r"stacks here: .*prod"):
        fc.stack_path("nope")
    with pytest.raises(fc.ShapeError, match="not a Pulumi stack name"):
        fc.stack_path("../etc")


@pytest.fixture
def shape_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "shape.json"
    monkeypatch.setattr(fc, "SHAPE_FILE", path)
    return path


def test_the_shape_record_tells_stacks_and_changed_files_apart(
    shape_file: Path, tmp_path: Path
) -> None:
    staging = ROOT / "Pulumi.staging.yaml"
    fc.write_shape(fc.shape_of("staging", staging, fc.load_stack(staging)))
    record = json.loads(shape_file.read_text())
    assert record["flavor_nodes"] == {"h100": 1, "a100": 1}
    assert fc.mismatch("staging", staging) is None
    local = ROOT / "Pulumi.local.yaml"
    assert "shaped like stack 'staging'" in (fc.mismatch("local", local) or "")
    copy = write_stack(stack_raw("staging"), tmp_path, "staging")
    assert "shaped like stack 'staging'" in (fc.mismatch("staging", copy) or "")
    fc.write_shape(fc.shape_of("staging", copy, fc.load_stack(copy)))
    copy.write_text(copy.read_text() + "\n# changed\n")
    assert "changed since it shaped" in (fc.mismatch("staging", copy) or "")


def test_a_flavor_without_hardware_is_named_in_the_shape(tmp_path: Path) -> None:
    raw = stack_raw("prod")
    del raw["flavors"][1]["nodes"]
    path = write_stack(raw, tmp_path, "prod")
    shape = fc.shape_of("prod", path, fc.load_stack(path))
    assert shape.hardless_flavors == ["a100"]
    assert "a100 declare no nodes or capacity" in shape.describe()


def test_the_priority_class_the_controller_names_is_provided() -> None:
    """A PriorityClass is the cluster's, not the stack's: the sandbox's cloud has the one
    kueue.controller.priorityClassName names (else the API server refuses the pods)."""
    raw = stack_raw("prod")
    raw["kueue"]["controller"]["priorityClassName"] = "platform-critical"
    objs = fc.objects(load_config(raw))
    assert kinds(objs, "PriorityClass") == {
        "platform-critical": {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "platform-critical"},
            "value": 1_000_000,
            "description": "the platform's, as the stack's kueue.controller names it",
        }
    }
    assert kinds(built("prod"), "PriorityClass") == {}


# --- capacity on demand ------------------------------------------------------------------

PROVISIONING_STACK = ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-provisioning.yaml"


def test_a_stack_with_provisioning_checks_gets_the_provisioning_request_api_first() -> None:
    objs = fc.objects(fc.load_stack(PROVISIONING_STACK))
    crd = objs[0]
    # What Kueue looks for at start (cmd/kueue/main.go: ServerSupportsProvisioningRequest):
    # autoscaling.x-k8s.io/v1 provisioningrequests, namespaced, its status written apart.
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "provisioningrequests.autoscaling.x-k8s.io"
    assert crd["spec"]["group"] == "autoscaling.x-k8s.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["kind"] == "ProvisioningRequest"
    assert crd["spec"]["names"]["plural"] == "provisioningrequests"
    [v1] = crd["spec"]["versions"]
    assert (v1["name"], v1["served"], v1["storage"]) == ("v1", True, True)
    assert v1["subresources"] == {"status": {}}
    spec = v1["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["podSets", "provisioningClassName"]
    assert [o for o in built("local") if o["kind"] == "CustomResourceDefinition"] == []


def test_the_nodes_of_a_flavor_a_provisioning_check_runs_on_come_later() -> None:
    stack = fc.load_stack(PROVISIONING_STACK)
    assert stack_nodes.on_demand_flavors(stack) == {"on-demand-gpu"}
    assert sorted(kinds(fc.objects(stack), "Node")) == [stack_nodes.SYSTEM_NODE]
    raw = load_config(stack_raw("local")).model_dump(by_alias=True, exclude_none=True)
    raw["provisioning"] = {
        "checks": [{"name": "autoscale", "provisioningClassName": "x.example.com"}],
        "teams": [{"name": "ml", "checks": [{"name": "autoscale"}]}],
    }
    # Without onFlavors the check runs on every flavor of the team's quota.
    assert stack_nodes.on_demand_flavors(load_config(raw)) == {"gpu-flavor"}
