"""gpu_queues.tools.kueue_diff and its place in the PR comment: a Kueue version change shown
prominently.

Manifests here are the unit fixture release at two versions with a change made on purpose;
tests/toolchain/test_kueue_versions.py compares the real renders of supported releases.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.release.module import RenderError
from gpu_queues.tools import kueue_diff
from gpu_queues.tools.kueue_diff import changed_paths, object_changes, section, side_from_raw
from gpu_queues.tools.pr_comment import with_kueue_diff
from tests.conftest import MANIFEST
from tests.unit.conftest import git

pytestmark = pytest.mark.unit

BASE = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def release(version: str, change: Any = None) -> bytes:
    docs = copy.deepcopy(BASE)
    for doc in docs:
        if doc["kind"] == "Deployment":
            for c in doc["spec"]["template"]["spec"]["containers"]:
                c["image"] = c["image"].rsplit(":", 1)[0] + ":" + version
    if change is not None:
        change(docs)
    return yaml.safe_dump_all(docs).encode()


def newer(docs: list[dict[str, Any]]) -> None:
    """What a minor release typically does: a CRD schema, a role, one object more, one less."""
    crd = next(d for d in docs if d["kind"] == "CustomResourceDefinition")
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": {"type": "object", "x": 1}}
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    role["rules"] = [*role.get("rules", []), {"apiGroups": [""], "resources": ["events"]}]
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "kueue-new-service", "namespace": "kueue-system"},
            "spec": {"ports": [{"port": 443}]},
        }
    )
    sa = next(i for i, d in enumerate(docs) if d["kind"] == "ServiceAccount")
    docs[sa]["metadata"]["name"] = "kueue-renamed-sa"


RENDERS = {"v0.18.3": release("v0.18.3"), "v0.19.2": release("v0.19.2", newer)}


def renderer(version: str) -> bytes:
    if version not in RENDERS:
        raise RenderError(f"Kueue {version} has no wrapper module")
    return RENDERS[version]


def side(version: str, **kueue: Any) -> kueue_diff.KueueSide:
    sha = hashlib.sha256(RENDERS.get(version, b"")).hexdigest()
    return side_from_raw("s", {"kueue": {"manifest": {"sha256": sha}, **kueue}}, version)


def test_object_changes_by_kind_namespace_and_name():
    changes = object_changes(RENDERS["v0.18.3"], RENDERS["v0.19.2"])
    summary = {(c.change, c.kind, c.name) for c in changes}
    assert ("changed", "CustomResourceDefinition", BASE_CRD) in summary
    assert ("added", "Service", "kueue-new-service") in summary
    assert ("added", "ServiceAccount", "kueue-renamed-sa") in summary
    assert ("removed", "ServiceAccount", BASE_SA) in summary
    deployment = next(c for c in changes if c.kind == "Deployment")
    assert deployment.paths == ("spec.template.spec.containers[manager].image",)
    assert object_changes(RENDERS["v0.18.3"], RENDERS["v0.18.3"]) == []


BASE_CRD = next(d["metadata"]["name"] for d in BASE if d["kind"] == "CustomResourceDefinition")
BASE_SA = next(d["metadata"]["name"] for d in BASE if d["kind"] == "ServiceAccount")


def test_changed_paths_names_list_items_by_name_and_caps_depth():
    old = {"spec": {"versions": [{"name": "v1", "x": 1}, {"name": "v2", "x": 1}]}}
    new = {"spec": {"versions": [{"name": "v1", "x": 1}, {"name": "v2", "x": 2}]}}
    assert changed_paths(old, new) == ["spec.versions[v2].x"]
    assert changed_paths({"a": [1, 2]}, {"a": [1, 3]}) == ["a"]
    assert changed_paths({"a": {"b": {"c": 1}}}, {"a": {"b": {"c": 2}}}, depth=1) == ["a"]


def test_a_version_change_leads_with_old_to_new_the_objects_and_the_owners_advice():
    text = section(side("v0.18.3"), side("v0.19.2"), "staging", renderer)
    first = text.splitlines()[0]
    assert first == "### Kueue v0.18.3 → v0.19.2 (upgrade) on `staging`"
    assert "| changed | CustomResourceDefinition |" in text
    assert "| added | Service | kueue-system | kueue-new-service |" in text
    assert "**For queue owners**" in text
    assert "turns waitForPodsReady on" in text


def test_a_downgrade_is_called_one():
    text = section(side("v0.19.2"), side("v0.18.3"), "dev", renderer)
    assert text.startswith("### Kueue v0.19.2 → v0.18.3 (downgrade) on `dev`")


def test_no_section_when_neither_version_nor_checksum_moves():
    assert section(side("v0.18.3"), side("v0.18.3"), "dev", renderer) == ""
    off = side_from_raw("s", {"kueue": {"install": False, "version": "v0.17.0"}}, "v0.18.3")
    off2 = side_from_raw("s", {"kueue": {"install": False, "version": "v0.19.2"}}, "v0.18.3")
    assert section(off, off2, "promo", renderer) == ""


def test_a_new_checksum_at_the_same_version_is_shown_too():
    other = side_from_raw("s", {"kueue": {"manifest": {"sha256": "f" * 64}}}, "v0.18.3")
    text = section(side("v0.18.3"), other, "prod", renderer)
    assert text.startswith("### Kueue v0.18.3: new manifest on `prod`")
    assert "`ffffffffffff`" in text
    assert "The release objects are identical" in text


MIRRORED = {"imageRegistry": "registry.corp.example", "imagePullSecrets": ["corp-pull"]}


def test_a_change_of_controller_knobs_alone_gets_a_section_naming_them():
    before = side("v0.18.3", controller={"replicas": 2})
    after = side("v0.18.3", controller={"replicas": 2, **MIRRORED})
    text = section(before, after, "prod", renderer)
    assert text.splitlines() == [
        "### Kueue v0.18.3: controller knobs on `prod`",
        "",
        "Controller knobs in effect (gpu-queues:kueue.controller, laid over the release):",
        "",
        '- `imagePullSecrets`: `["corp-pull"]` (was unset)',
        '- `imageRegistry`: `"registry.corp.example"` (was unset)',
        "- `replicas`: `2`",
    ]
    assert section(after, after, "prod", renderer) == ""


def test_a_version_change_names_the_knobs_in_effect():
    text = section(
        side("v0.18.3", controller=MIRRORED), side("v0.19.2", controller=MIRRORED), "s", renderer
    )
    assert '- `imageRegistry`: `"registry.corp.example"`\n' in text
    assert "(was" not in text


def test_knobs_of_a_stack_that_does_not_install_kueue_are_not_shown():
    off = {"install": False, "controller": MIRRORED}
    a = side_from_raw("s", {"kueue": off}, "v0.18.3")
    b = side_from_raw("s", {"kueue": {**off, "controller": {"replicas": 3}}}, "v0.18.3")
    assert section(a, b, "s", renderer) == ""


def test_a_release_that_cannot_be_rendered_is_named_not_guessed():
    text = section(side("v0.18.3"), side("v0.99.0"), "dev", renderer)
    assert "Release objects: not compared (Kueue v0.99.0 has no wrapper module)" in text
    assert "Not a supported release: v0.99.0" in text


# --- in the PR comment, from git revisions ----------------------------------------------


def stack_file(kueue: dict[str, Any]) -> str:
    return yaml.safe_dump({"config": {"gpu-queues:kueue": kueue}})


def test_the_pr_comment_puts_a_version_change_on_top(repo: Path, monkeypatch):
    (repo / "toolchain").mkdir()
    (repo / "toolchain" / "pins.env").write_text("# pins\nKUEUE_VERSION=v0.18.3\n")
    sha_old = hashlib.sha256(RENDERS["v0.18.3"]).hexdigest()
    (repo / "Pulumi.team-x.yaml").write_text(stack_file({"manifest": {"sha256": sha_old}}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    # The PR moves the pin; the stack follows it (it names no version of its own).
    (repo / "toolchain" / "pins.env").write_text("# pins\nKUEUE_VERSION=v0.19.2\n")
    sha_new = hashlib.sha256(RENDERS["v0.19.2"]).hexdigest()
    (repo / "Pulumi.team-x.yaml").write_text(stack_file({"manifest": {"sha256": sha_new}}))
    monkeypatch.setattr(kueue_diff, "_render", renderer)

    body = with_kueue_diff("| quota table |\n", f"team-x@{base}", "team-x", repo)
    assert body.startswith("### Kueue v0.18.3 → v0.19.2 (upgrade) on `team-x`")
    assert body.endswith("\n| quota table |\n")
    # No move, no section: the quota table alone.
    assert with_kueue_diff("| q |\n", "team-x", "team-x", repo) == "| q |\n"
    # A stack new in the PR has no base side: said in one line.
    (repo / "Pulumi.new.yaml").write_text(stack_file({}))
    body = with_kueue_diff("| q |\n", f"new@{base}", "new", repo)
    assert body.startswith("_Kueue version not compared: unknown stack 'new' at revision")


def test_cli_prints_nothing_without_a_change(tmp_path: Path, capsys):
    (tmp_path / "toolchain").mkdir()
    (tmp_path / "toolchain" / "pins.env").write_text("KUEUE_VERSION=v0.18.3\n")
    (tmp_path / "Pulumi.a.yaml").write_text(stack_file({}))
    assert kueue_diff.main(["a", "a", "--root", str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""
    assert kueue_diff.main(["a", "nope", "--root", str(tmp_path)]) == 2
    assert "unknown stack 'nope'" in capsys.readouterr().err


def test_a_stack_that_sets_its_release_needs_no_pins_beside_it(tmp_path: Path) -> None:
    # A folder of stack files without toolchain/pins.env (a test's, a user's): the stack's own
    # kueue.version answers; only a stack without one needs the pin, and says so.
    (tmp_path / "Pulumi.own.yaml").write_text(
        "config:\n  gpu-queues:kueue: {version: v0.19.2}\n  gpu-queues:teams: []\n"
    )
    (tmp_path / "Pulumi.pinned.yaml").write_text("config:\n  gpu-queues:teams: []\n")
    assert kueue_diff.load_side("own", tmp_path).version == "v0.19.2"
    with pytest.raises(FileNotFoundError):
        kueue_diff.load_side("pinned", tmp_path)
