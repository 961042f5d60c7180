"""YAML that is no Kubernetes object (issue 24, item 6): a manifest is JSON data (string keys;
strings, numbers, booleans, null, lists and mappings), and YAML can spell more: timestamps,
binary, sets, non-string or mixed keys, NaN (deep nesting is refused earlier, as it is read:
tests/unit/test_yamlio.py). Each is refused before anything is
compared, with a ManifestError naming the document and the field, never a traceback (they
used to crash the digest with a TypeError), custom or not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.config.model import KueueConfig
from gpu_queues.release.manifest import ManifestError, load_release
from tests.conftest import MANIFEST, stand_in

pytestmark = pytest.mark.unit

NAMESPACE = "metadata:\n  name: kueue-system\n"


def _with(extra: str) -> str:
    base = MANIFEST.read_text()
    assert NAMESPACE in base
    return base.replace(NAMESPACE, NAMESPACE + extra, 1)


CASES = [
    ("timestamp", "  annotations: {x: 2020-01-01}\n", "metadata.annotations.x", "timestamp"),
    ("binary", "  annotations: {x: !!binary aGVsbG8=}\n", "metadata.annotations.x", "bytes"),
    ("set", "  annotations: {x: !!set {a, b}}\n", "metadata.annotations.x", "set"),
    ("int-key", "  annotations: {1: x, a: y}\n", "metadata.annotations", "key 1"),
    ("bool-key", "  annotations: {true: x}\n", "metadata.annotations", "key True"),
    ("null-key", "  annotations: {~: x}\n", "metadata.annotations", "key None"),
    ("nan", "  annotations: {x: .nan}\n", "metadata.annotations.x", "nan"),
    ("infinity", "  annotations: {x: -.inf}\n", "metadata.annotations.x", "inf"),
]


@pytest.mark.parametrize(("name", "extra", "at", "says"), CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("custom", [False, True], ids=["release", "custom"])
def test_yaml_that_is_no_kubernetes_data_is_refused_naming_the_field(
    tmp_path: Path, name: str, extra: str, at: str, says: str, custom: bool
) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(_with(extra))
    manifest: dict[str, object] = {"path": str(path)}
    if custom:
        manifest.update(custom=True, reason="yaml under test")
    with pytest.raises(ManifestError) as info:
        load_release(KueueConfig.model_validate({"manifest": manifest}), releases=stand_in())
    message = str(info.value)
    assert "document 0 (Namespace kueue-system)" in message, message
    assert at in message and says in message, message


def test_quoted_values_of_the_same_spelling_are_plain_data(tmp_path: Path) -> None:
    """The near miss: the same values quoted are strings; the manifest is then merely not the
    release (it has an annotation more), refused as such and not as YAML."""
    path = tmp_path / "m.yaml"
    path.write_text(_with("  annotations: {x: '2020-01-01', '1': x}\n"))
    with pytest.raises(ManifestError, match="differs from the release"):
        load_release(
            KueueConfig.model_validate({"manifest": {"path": str(path)}}), releases=stand_in()
        )


def test_the_path_names_list_items_by_index_and_odd_keys_quoted() -> None:
    from gpu_queues.release.data import problem

    assert problem({"a": [1, {"b/c": {"x": frozenset()}}]}) == (
        'a[1]["b/c"].x is a YAML set (!!set), not a list'
    )
    assert problem({"a": [1, 2.5, None, True, "s", {"k": []}]}) is None
    assert problem({"a": {5: 1}}) == "a has key 5 (int): Kubernetes keys are strings (quote it)"


def test_a_local_manifest_larger_than_any_release_is_not_read_whole(tmp_path: Path) -> None:
    from gpu_queues.release import manifest as m

    path = tmp_path / "m.yaml"
    path.write_bytes(MANIFEST.read_bytes() + b"\n#" + b"x" * 4096 + b"\n")
    config = KueueConfig.model_validate({"manifest": {"path": str(path)}})
    with pytest.raises(ManifestError, match="larger than 4096 bytes"):
        m.read_manifest(config, limit=4096)
    assert m.read_manifest(config) == path.read_bytes()  # the real limit: 32 MiB


def test_more_documents_than_any_release_has_are_refused_before_they_are_parsed() -> None:
    from gpu_queues.release.manifest import MAX_DOCUMENTS, parse_documents

    data = MANIFEST.read_bytes() + b"\n" + b"---\n" * (MAX_DOCUMENTS + 1)
    with pytest.raises(ManifestError, match=f"more than {MAX_DOCUMENTS} YAML documents"):
        parse_documents(data, "m.yaml")
    # a release (79 objects) and a custom manifest's 50 more are far below it
    assert MAX_DOCUMENTS >= 1000
