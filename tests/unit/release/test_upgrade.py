"""The upgrade check of the validation phase: the running Kueue (as read from the cluster)
against the release the stack installs. The cluster side is given as data here; the sandbox
e2e test (tests/e2e/test_upgrade.py) reads a real one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.release.manifest import prepare_manifest
from gpu_queues.release.upgrade import (
    ClusterUnreadable,
    LiveCrd,
    LiveKueue,
    UpgradeRefused,
    check_live,
    check_stack,
    describe_move,
    target_crds,
    upgrade_problems,
)

pytestmark = pytest.mark.unit

IMAGE = "registry.k8s.io/kueue/kueue:"


def crd(name: str, versions: list[tuple[str, bool]], group: str = "kueue.x-k8s.io") -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "versions": [{"name": v, "served": True, "storage": s} for v, s in versions],
        },
    }


WORKLOADS = "workloads.kueue.x-k8s.io"
V1B2 = [("v1beta1", False), ("v1beta2", True)]


def live(version: str | None, workloads: tuple[str, tuple[str, ...]] | None = None) -> LiveKueue:
    """A cluster running `version`, with the Workload CRD at (storage, storedVersions)."""
    crds = {WORKLOADS: LiveCrd(WORKLOADS, *workloads)} if workloads else {}
    return LiveKueue(IMAGE + version if version else None, crds)


def test_target_crds_reads_versions_and_storage_of_kueue_groups_only():
    objects = [crd(WORKLOADS, V1B2), crd("other.example.com", [("v1", True)], "example.com")]
    found = target_crds(objects)
    assert list(found) == [WORKLOADS]
    assert found[WORKLOADS].versions == ("v1beta1", "v1beta2")
    assert found[WORKLOADS].storage == "v1beta2"


def test_moving_between_releases_with_the_same_storage_is_allowed_both_ways():
    cluster = live("v0.19.2", workloads=("v1beta2", ("v1beta2",)))
    assert upgrade_problems(cluster, "v0.18.3", [crd(WORKLOADS, V1B2)]) == []
    assert upgrade_problems(cluster, "v0.19.2", [crd(WORKLOADS, V1B2)]) == []


def test_a_downgrade_across_a_storage_version_change_is_refused():
    cluster = live("v0.20.1", workloads=("v1", ("v1beta2", "v1")))
    target = [crd(WORKLOADS, [("v1beta2", True), ("v1", False)])]
    (problem,) = upgrade_problems(cluster, "v0.19.2", target)
    assert problem.startswith(f"CRD {WORKLOADS}: downgrading Kueue v0.20.1 -> v0.19.2 crosses")
    assert "v0.20.1 stores it at v1, v0.19.2 at v1beta2" in problem


def test_the_same_storage_change_forward_is_an_upgrade_and_allowed():
    cluster = live("v0.19.2", workloads=("v1beta2", ("v1beta2",)))
    target = [crd(WORKLOADS, [("v1beta2", False), ("v1", True)])]
    assert upgrade_problems(cluster, "v0.20.1", target) == []


def test_objects_stored_at_a_version_the_target_drops_are_refused_in_any_direction():
    # A cluster that started before v1beta2 was the storage version still lists v1beta1.
    cluster = live("v0.19.2", workloads=("v1beta2", ("v1beta1", "v1beta2")))
    target = [crd(WORKLOADS, [("v1beta2", True), ("v1", False)])]
    (problem,) = upgrade_problems(cluster, "v0.20.1", target)
    assert "still stores objects at v1beta1" in problem
    assert "Migrate them to v1beta2 first" in problem
    assert "or stay on v0.19.2" in problem


def test_a_fresh_cluster_or_crds_without_a_controller_are_checked_too():
    assert upgrade_problems(LiveKueue(), "v0.18.3", [crd(WORKLOADS, V1B2)]) == []
    leftover = live(None, workloads=("v1alpha9", ("v1alpha9",)))
    (problem,) = upgrade_problems(leftover, "v0.18.3", [crd(WORKLOADS, V1B2)])
    assert "still stores objects at v1alpha9" in problem
    assert "stay on" not in problem


@pytest.mark.parametrize(
    ("image", "version"),
    [
        (IMAGE + "v0.18.3", "v0.18.3"),
        (IMAGE + "main", None),
        ("registry.example/kueue:v0.18.3", None),
        (None, None),
    ],
)
def test_the_running_version_comes_from_the_official_image_tag_only(image, version):
    assert LiveKueue(image).version == version


def test_describe_move():
    assert describe_move(LiveKueue(), "v0.18.3").startswith("Kueue v0.18.3: fresh install")
    assert describe_move(live("v0.18.3"), "v0.19.2") == "Kueue v0.18.3 -> v0.19.2 (upgrade)"
    assert describe_move(live("v0.19.2"), "v0.18.3") == "Kueue v0.19.2 -> v0.18.3 (downgrade)"
    assert "no version change" in describe_move(live("v0.18.3"), "v0.18.3")


def unreadable(*_: Any) -> LiveKueue:
    raise ClusterUnreadable("connection refused")


def test_an_unreadable_cluster_refuses_up_and_warns_in_preview():
    objects = [crd(WORKLOADS, V1B2)]
    checked = check_live(None, None, "v0.18.3", objects, dry_run=True, reader=unreadable)
    assert checked.warning
    assert "connection refused" in checked.message and "skipped in this preview" in checked.message
    with pytest.raises(UpgradeRefused, match=r"connection refused.*nothing was applied"):
        check_live(None, None, "v0.18.3", objects, dry_run=False, reader=unreadable)


def test_a_refusal_names_the_move_and_every_problem():
    cluster = live("v0.20.1", workloads=("v1", ("v1",)))

    def reader(kubeconfig, context, names):
        assert names == [WORKLOADS]
        return cluster

    target = [crd(WORKLOADS, [("v1beta2", True), ("v1", False)])]
    with pytest.raises(UpgradeRefused) as info:
        check_live(None, None, "v0.19.2", target, dry_run=True, reader=reader)
    message = str(info.value)
    assert message.startswith("Kueue v0.20.1 -> v0.19.2 (downgrade) is refused; nothing was")
    assert "1 problem(s)" in message


def test_check_stack_reads_with_the_stacks_own_connection(prod_raw, manifest):
    raw = copy.deepcopy(prod_raw)
    raw["kubernetes"] = {"kubeconfig": "apiVersion: v1\nkind: Config\n", "context": "prod"}
    config = load_config(raw)
    prepared = prepare_manifest(manifest, config.kueue)
    seen = []

    def reader(kubeconfig, context, names):
        seen.append((kubeconfig, context, names))
        return live(prepared.version)

    checked = check_stack(config, prepared, dry_run=False, reader=reader)
    assert checked is not None and not checked.warning
    assert "no version change" in checked.message
    assert seen[0][:2] == ("apiVersion: v1\nkind: Config\n", "prod")
    assert "clusterqueues.kueue.x-k8s.io" in seen[0][2]  # the fixture release's one CRD


def test_check_stack_does_nothing_for_a_stack_that_does_not_install_kueue(prod_raw):
    raw = copy.deepcopy(prod_raw)
    raw["kueue"] = {"install": False}
    assert check_stack(load_config(raw), None, dry_run=False, reader=unreadable) is None
