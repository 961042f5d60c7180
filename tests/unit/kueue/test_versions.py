"""Supported Kueue releases: their recorded facts, the config each refuses (naming the version),
and what moving a stack between them changes for queue owners.

The facts themselves are checked against the module sources in
tests/toolchain/test_kueue_versions.py; here they are used as the program uses them.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.kueue import versions as kv
from gpu_queues.kueue.versions import Release, advice, gate_problems, parse_version

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
OLD, NEW = "v0.18.3", "v0.19.2"


def with_kueue(raw, **kueue):
    raw = copy.deepcopy(raw)
    raw["kueue"] = {**raw.get("kueue", {}), **kueue}
    return raw


def messages(raw) -> list[str]:
    try:
        load_config(raw)
    except ConfigError as error:
        return error.messages
    return []


def test_the_supported_releases_are_the_committed_wrappers():
    wrappers = sorted(p.name for p in (ROOT / kv.WRAPPERS).iterdir() if p.is_dir())
    assert kv.supported() == sorted(wrappers, key=parse_version)
    assert {OLD, "v0.18.4", NEW} <= set(kv.supported())
    for version in kv.supported():
        assert (ROOT / kv.WRAPPERS / version / "go.sum").is_file()


def test_versions_sort_as_numbers_not_text():
    assert sorted(["v0.19.10", "v0.19.2", "v0.9.0"], key=parse_version) == [
        "v0.9.0",
        "v0.19.2",
        "v0.19.10",
    ]
    with pytest.raises(ValueError, match="not a Kueue release"):
        parse_version("0.19.2")


def test_a_gate_only_the_newer_release_has_is_refused_on_the_older_naming_the_version(prod_raw):
    gates = {"DisableWaitForPodsReady": True}
    raw = with_kueue(prod_raw, version=OLD, manager={"featureGates": gates})
    found = messages(raw)
    assert found == [
        "gpu-queues:kueue.manager.featureGates.DisableWaitForPodsReady: feature gate "
        "'DisableWaitForPodsReady' does not exist in Kueue v0.18.3 (it would refuse to start: "
        "unrecognized feature gate); remove it"
    ]
    assert messages(with_kueue(prod_raw, version=NEW, manager={"featureGates": gates})) == []


def test_a_gate_the_newer_release_dropped_is_refused_there(prod_raw):
    gates = {"LendingLimit": True}
    assert messages(with_kueue(prod_raw, version=OLD, manager={"featureGates": gates})) == []
    (found,) = messages(with_kueue(prod_raw, version=NEW, manager={"featureGates": gates}))
    assert "featureGates.LendingLimit" in found
    assert "does not exist in Kueue v0.19.2" in found


def test_a_locked_gate_may_only_be_set_to_its_locked_value(prod_raw):
    locked = kv.release(OLD).locked_gates
    gate, value = next(iter(sorted(locked.items())))
    ok = with_kueue(prod_raw, version=OLD, manager={"featureGates": {gate: value}})
    assert messages(ok) == []
    bad = with_kueue(prod_raw, version=OLD, manager={"featureGates": {gate: not value}})
    (found,) = messages(bad)
    assert f"is locked to {str(value).lower()} in Kueue v0.18.3" in found


def test_an_unknown_integration_is_refused_naming_the_version(prod_raw):
    raw = with_kueue(prod_raw, version=NEW, manager={"integrations": {"frameworks": ["x/y"]}})
    (found,) = messages(raw)
    assert found.startswith("gpu-queues:kueue.manager.integrations.frameworks[0]: 'x/y'")
    assert "is not a Kueue v0.19.2 integration" in found


def test_the_pinned_version_is_used_when_the_stack_sets_none(prod_raw):
    raw = with_kueue(prod_raw, manager={"featureGates": {"NoSuchGate": True}})
    raw["kueue"].pop("version", None)
    (found,) = messages(raw)
    assert f"does not exist in Kueue {kv.releases()[load_pin()].version}" in found


def load_pin() -> str:
    from gpu_queues.pins import kueue_version

    return kueue_version()


def test_unknown_versions_are_not_judged_by_the_config_but_by_the_manifest_check(prod_raw):
    # Promotion targets that only wait for Kueue may name any release (install: false).
    raw = with_kueue(prod_raw, version="v0.99.0", manager={"featureGates": {"Anything": True}})
    assert messages(raw) == []
    assert "not a release this program supports" in kv.unsupported_message("v0.99.0")
    assert OLD in kv.unsupported_message("v0.99.0")


# --- advice -------------------------------------------------------------------------------


def test_upgrading_a_stack_without_wait_for_pods_ready_warns_of_the_new_default():
    items = advice({}, kv.release(OLD), kv.release(NEW))
    wfpr = [a for a in items if a.key == "manager.waitForPodsReady"]
    assert len(wfpr) == 1 and not wfpr[0].required
    assert "turns waitForPodsReady on" in wfpr[0].text and "30m" in wfpr[0].text
    assert not any(a.required for a in items)


def test_a_stack_that_sets_wait_for_pods_ready_or_disables_it_gets_no_such_warning():
    manager = {"waitForPodsReady": {"timeout": "10m"}}
    keys = {a.key for a in advice({"manager": manager}, kv.release(OLD), kv.release(NEW))}
    assert "manager.waitForPodsReady" not in keys
    disabled = {"manager": {"featureGates": {"DisableWaitForPodsReady": True}}}
    keys = {a.key for a in advice(disabled, kv.release(OLD), kv.release(NEW))}
    assert "manager.waitForPodsReady" not in keys


def test_a_gate_the_new_release_refuses_must_change():
    kueue = {"manager": {"featureGates": {"LendingLimit": True, "TopologyAwareScheduling": True}}}
    (required,) = [a for a in advice(kueue, kv.release(OLD), kv.release(NEW)) if a.required]
    assert required.key == "manager.featureGates.LendingLimit"
    assert str(required).startswith("MUST CHANGE kueue.manager.featureGates.LendingLimit:")


def test_default_integrations_dropped_by_the_release_are_named_unless_the_stack_lists_its_own():
    items = advice({}, kv.release(OLD), kv.release(NEW))
    (dropped,) = [a for a in items if a.key == "manager.integrations.frameworks"]
    assert "kubeflow.org/pytorchjob" in dropped.text
    own = {"manager": {"integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]}}}
    items = advice(own, kv.release(OLD), kv.release(NEW))
    assert not [a for a in items if a.key == "manager.integrations.frameworks"]


def test_ray_quota_note_only_for_stacks_that_run_ray():
    ray = [a for a in advice({}, kv.release(OLD), kv.release(NEW)) if "Ray" in a.text]
    assert len(ray) == 1  # the release's default integrations include ray.io/*
    batch_only = {"manager": {"integrations": {"frameworks": ["batch/job"]}}}
    items = advice(batch_only, kv.release(OLD), kv.release(NEW))
    assert not [a for a in items if "Ray" in a.text]


def test_a_patch_release_changes_nothing_for_queue_owners():
    assert advice({}, kv.release(OLD), kv.release("v0.18.4")) == []


def test_going_back_says_what_is_undone():
    items = advice({}, kv.release(NEW), kv.release(OLD))
    wfpr = next(a for a in items if a.key == "manager.waitForPodsReady")
    assert "no longer waits for pods to be ready" in wfpr.text
    assert any(a.text.startswith("(going back to v0.18.3 undoes this)") for a in items)


def test_gate_rules_work_for_a_release_never_seen_before():
    rel = Release("v9.9.9", ("Alpha", "Gone"), {"Gone": True})
    assert gate_problems({"Alpha": False, "Gone": True}, rel) == []
    assert [g for g, _ in gate_problems({"Beta": True, "Gone": False}, rel)] == ["Beta", "Gone"]


def test_release_facts_round_trip_through_json(tmp_path):
    path = tmp_path / "releases.json"
    path.write_text("{}")
    rel = Release("v1.2.3", ("A", "B"), {"B": True}, ("x/y",), ("x/y",), "30m")
    kv.write_release(rel, path)
    kv.write_release(Release("v1.2.10", ("A",)), path)
    loaded = kv.load_releases(path)
    assert list(loaded) == ["v1.2.3", "v1.2.10"]
    assert loaded["v1.2.3"] == rel
