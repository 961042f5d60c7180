"""The controller knobs of issue 24 item 2 laid over the verified release objects: an image
registry mirror (only the registry changes; path and tag stay the release's), a
priorityClassName and imagePullSecrets. A manifest that sets the same fields itself is not
the release (refused, and as a custom manifest too); the stack's knobs are named in the
preview's provenance line. The release is the stand-in (tests/conftest.py stand_in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config.model import KueueConfig
from gpu_queues.release.manifest import ManifestError, load_release, prepare_manifest
from gpu_queues.release.upgrade import LiveKueue
from tests.conftest import MANIFEST, STAND_IN_VERSION, stand_in

pytestmark = pytest.mark.unit

CUSTOM = {"custom": True, "reason": "PLAT-1 dashboards"}
KNOBS = {
    "imageRegistry": "registry.corp.example:5000/mirrors/k8s",
    "priorityClassName": "platform-critical",
    "imagePullSecrets": ["corp-pull", "backup-pull"],
}
# Hand-written from the stand-in's image (registry.k8s.io/kueue/kueue:<its version>).
MIRRORED = f"registry.corp.example:5000/mirrors/k8s/kueue/kueue:{STAND_IN_VERSION}"


def objects() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(MANIFEST.read_bytes()) if d is not None]


def pod(objs: Any) -> dict[str, Any]:
    deployment = next(o for o in objs if o["kind"] == "Deployment")
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def config(path: Path | None = None, **extra: Any) -> KueueConfig:
    data: dict[str, Any] = {"controller": KNOBS, **extra}
    if path is not None:
        data["manifest"] = {"path": str(path), **data.pop("manifest", {})}
    return KueueConfig.model_validate(data)


def test_the_knobs_are_laid_over_the_release_deployment() -> None:
    prepared = prepare_manifest(objects(), config())
    spec = pod(prepared.objects)
    assert spec["containers"][0]["image"] == MIRRORED
    assert spec["priorityClassName"] == "platform-critical"
    assert spec["imagePullSecrets"] == [{"name": "corp-pull"}, {"name": "backup-pull"}]
    assert prepared.image == MIRRORED  # what the readiness gate waits for


def test_without_the_knobs_the_release_pod_is_untouched() -> None:
    release = pod(objects())
    spec = pod(prepare_manifest(objects(), KueueConfig()).objects)
    assert spec["containers"][0]["image"] == release["containers"][0]["image"]
    assert "priorityClassName" not in spec and "imagePullSecrets" not in spec


def test_the_mirror_keeps_the_release_path_and_tag() -> None:
    image = pod(prepare_manifest(objects(), config()).objects)["containers"][0]["image"]
    release = pod(objects())["containers"][0]["image"]
    assert image.rpartition("/")[2] == release.rpartition("/")[2] == f"kueue:{STAND_IN_VERSION}"
    assert image.endswith("/kueue/kueue:" + STAND_IN_VERSION)


def test_the_release_with_knobs_is_still_the_release_and_the_preview_names_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(MANIFEST.read_bytes())
    prepared = load_release(config(path), releases=stand_in())
    assert prepared.genuine
    assert prepared.provenance is not None
    assert "object for object" in prepared.provenance
    for shown in (
        'imageRegistry="registry.corp.example:5000/mirrors/k8s"',
        'priorityClassName="platform-critical"',
        'imagePullSecrets=["corp-pull", "backup-pull"]',
    ):
        assert shown in prepared.provenance


def test_a_release_without_knobs_names_none(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(MANIFEST.read_bytes())
    prepared = load_release(KueueConfig(manifest={"path": str(path)}), releases=stand_in())
    assert "typed knobs" not in (prepared.provenance or "")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("priorityClassName", "platform-critical"),
        ("imagePullSecrets", [{"name": "corp-pull"}]),
    ],
)
def test_a_manifest_setting_a_knob_field_itself_is_refused_even_as_custom(
    tmp_path: Path, field: str, value: Any
) -> None:
    changed = objects()
    pod(changed)[field] = value
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(changed))
    with pytest.raises(ManifestError, match="differs from the release"):
        load_release(KueueConfig(manifest={"path": str(path)}), releases=stand_in())
    custom = KueueConfig(manifest={"path": str(path), **CUSTOM})
    with pytest.raises(ManifestError, match=f"spec.template.spec.{field}"):
        load_release(custom, releases=stand_in())


def test_a_manifest_rewriting_the_image_to_a_mirror_is_refused_use_the_knob(tmp_path: Path) -> None:
    changed = objects()
    pod(changed)["containers"][0]["image"] = MIRRORED
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(changed))
    with pytest.raises(ManifestError, match="registry mirror"):
        load_release(KueueConfig(manifest={"path": str(path), **CUSTOM}), releases=stand_in())
    # The same image through the knob, on the release, is accepted.
    path.write_bytes(MANIFEST.read_bytes())
    assert load_release(config(path), releases=stand_in()).image == MIRRORED


def test_a_custom_manifest_with_the_knobs_compares_equal_on_the_knob_fields(
    tmp_path: Path,
) -> None:
    added = [
        *objects(),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dashboards", "namespace": "kueue-system"},
            "data": {"a": "b"},
        },
    ]
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump_all(added))
    prepared = load_release(config(path, manifest=CUSTOM), releases=stand_in())
    assert not prepared.genuine
    assert pod(prepared.objects)["containers"][0]["image"] == MIRRORED
    assert "priorityClassName" in (prepared.provenance or "")


def test_the_running_version_is_read_through_a_mirror() -> None:
    # the upgrade checks (downgrade, storage versions) still know which release runs
    assert LiveKueue(MIRRORED).version == STAND_IN_VERSION
    assert LiveKueue("registry.corp.example/other/kueue:v0.18.3").version is None
