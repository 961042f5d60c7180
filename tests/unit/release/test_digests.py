"""Release digests without a toolchain (gpu_queues.release.digests): a manifest is its release
when every object matches the recorded digests, whatever the YAML spelling; anything else is
named by what changed, was added or is missing. The digests of the real releases are checked
against fresh renders in tests/toolchain/test_kueue_release.py."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.kueue.versions import supported
from gpu_queues.release import digests

pytestmark = pytest.mark.unit

FIXTURE = Path(__file__).parent / "data" / "kueue-manifest.yaml"
VERSION = "v9.9.9"


def objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(FIXTURE.read_bytes()) if d is not None]


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    digests.write(digests.digest_of(VERSION, FIXTURE.read_bytes()), tmp_path)
    return tmp_path


def test_the_digest_of_an_object_is_the_sha256_of_its_canonical_json():
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kueue-system"}}
    expected = hashlib.sha256(
        b'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kueue-system"}}'
    ).hexdigest()
    assert digests.object_digests([namespace]) == {"core/Namespace/-/kueue-system": expected}
    reordered = {"metadata": {"name": "kueue-system"}, "kind": "Namespace", "apiVersion": "v1"}
    assert digests.object_digests([reordered]) == {"core/Namespace/-/kueue-system": expected}


def test_the_same_objects_in_another_yaml_spelling_are_the_release(recorded: Path):
    assert digests.compare(objects(), VERSION, recorded).genuine
    respelled = yaml.safe_dump_all(objects(), default_flow_style=True, width=50)
    assert respelled.encode() != FIXTURE.read_bytes()
    again = [d for d in yaml.safe_load_all(respelled) if d is not None]
    verdict = digests.compare(again, VERSION, recorded)
    assert verdict.genuine
    assert (
        verdict.summary("m.yaml") == "Kueue manifest m.yaml: the release v9.9.9, object for object"
    )


def test_a_changed_added_or_missing_object_is_named(recorded: Path):
    changed = objects()
    deployment = next(o for o in changed if o["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    container.setdefault("env", []).append({"name": "KUBECONFIG", "value": "/evil"})
    extra = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "extra", "namespace": "kueue-system"}}  # fmt: skip
    changed.append(extra)
    gone = next(o for o in changed if o["kind"] == "Namespace")
    changed.remove(gone)
    verdict = digests.compare(changed, VERSION, recorded)
    assert not verdict.genuine
    assert verdict.changed == [digests.object_key(deployment)]
    assert verdict.extra == ["core/ConfigMap/kueue-system/extra"]
    assert verdict.missing == [digests.object_key(gone)]
    summary = verdict.summary("m.yaml")
    assert summary.startswith("Kueue manifest m.yaml differs from the release v9.9.9: 1 changed")
    assert "1 added (core/ConfigMap/kueue-system/extra)" in summary


def test_an_object_given_twice_is_not_the_release(recorded: Path):
    twice = [*objects(), copy.deepcopy(objects()[0])]
    verdict = digests.compare(twice, VERSION, recorded)
    assert not verdict.genuine
    assert "twice" in verdict.changed[0]


def test_a_release_without_digests_is_known_to_have_none(tmp_path: Path):
    verdict = digests.compare(objects(), "v0.0.1", tmp_path)
    assert not verdict.known and not verdict.genuine
    assert "no digests are recorded for v0.0.1" in verdict.summary("m.yaml")


@pytest.mark.parametrize("version", supported())
def test_every_supported_release_has_digests_of_its_whole_manifest(version: str):
    recorded = digests.load(version)
    assert recorded is not None, f"make pin-kueue records {version}'s digests"
    raw = json.loads(digests.path_of(version).read_text())
    assert raw["version"] == version and len(raw["sha256"]) == 64
    kinds = {key.split("/")[1] for key in recorded.objects}
    assert {"CustomResourceDefinition", "Deployment", "ClusterRole",
            "MutatingWebhookConfiguration", "Service"} <= kinds  # fmt: skip
