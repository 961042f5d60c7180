"""`make pin-kueue` (gpu_queues.release.pin): the manifest pin written into stack files.

Render mode needs the toolchain (tests/toolchain/test_kueue_release.py); here the stack file
editing and the --file mode, on the committed stack files and on unusual ones.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from gpu_queues.release.pin import (
    PinError,
    main,
    pin,
    pin_release,
    pin_text,
    plan,
    release_url,
    set_pinned_version,
    storage_refusals,
)
from tests.conftest import MANIFEST, ROOT

pytestmark = pytest.mark.unit

DIGEST = "ab" * 32
PATH = {"path": ".kueue/v0.18.3/manifests.yaml"}


def kueue_block(text: str) -> dict:
    return yaml.safe_load(text)["config"]["gpu-queues:kueue"]


def changed_lines(old: str, new: str) -> tuple[list[str], list[str]]:
    a, b = old.splitlines(), new.splitlines()
    return [x for x in a if x not in b], [x for x in b if x not in a]


@pytest.mark.parametrize("stack", ["dev", "local", "staging", "prod"])
def test_committed_stacks_change_only_in_their_manifest_pin(stack):
    old = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    new = pin_text(old, PATH, DIGEST, stack)
    removed, added = changed_lines(old, new)
    assert all("path:" in line or "sha256:" in line for line in removed), removed
    assert {line.strip() for line in added} <= {
        "manifest:",
        "gpu-queues:kueue:",
        f"path: {PATH['path']}",
        f"sha256: {DIGEST}",
    }
    before, after = yaml.safe_load(old), yaml.safe_load(new)
    assert after["config"]["gpu-queues:kueue"]["manifest"] == {**PATH, "sha256": DIGEST}
    manifest_only = {"manifest": {**PATH, "sha256": DIGEST}}
    kueue_before = before["config"].pop("gpu-queues:kueue", None) or {}
    kueue_before.pop("manifest", None)
    kueue_after = after["config"].pop("gpu-queues:kueue")
    assert kueue_after == {**kueue_before, **manifest_only}
    assert before == after
    assert pin_text(new, PATH, DIGEST, stack) == new  # idempotent


UNUSUAL = {
    "no-kueue-block": """\
# a comment under config
config:
  # comment before the first key
  gpu-queues:teams: []
""",
    "kueue-last-then-top-level-key": """\
config:
  gpu-queues:teams: []
  gpu-queues:kueue:
    readinessTimeoutSeconds: 60
encryptionsalt: v1:abc
""",
    "flow-style": """\
config:
  gpu-queues:kueue: {readinessTimeoutSeconds: 60}
  gpu-queues:teams: []
""",
    "column-0-comment-inside-the-block": """\
config:
  gpu-queues:kueue:
    readinessTimeoutSeconds: 60
# a column-0 comment inside the kueue block
    manager:
      manageJobsWithoutQueueName: true
  gpu-queues:teams: []
""",
    "four-space-indent-and-secure-value": """\
config:
    gpu-queues:kubernetes:
        kubeconfig:
            secure: v1:AAAABBBBCCCC
    gpu-queues:kueue:
        version: v0.18.3
        controller:
            tolerations:
                - key: CriticalAddonsOnly
                  operator: Exists
    gpu-queues:teams: []
""",
    "old-url-and-comments": """\
config:
  gpu-queues:kueue:
    manifest:   # where the release comes from
      url: https://github.com/kubernetes-sigs/kueue/releases/download/v0.18.3/manifests.yaml
      sha256: "0000000000000000000000000000000000000000000000000000000000000000"
    # the readiness gate
    readinessTimeoutSeconds: 60
  gpu-queues:teams: []
""",
    "quoted-key": """\
config:
  "gpu-queues:kueue":
    readinessTimeoutSeconds: 60
  "gpu-queues:teams": []
""",
}


@pytest.mark.parametrize("text", UNUSUAL.values(), ids=UNUSUAL.keys())
def test_unusual_stack_files_get_exactly_the_pin(text):
    new = pin_text(text, PATH, DIGEST, "Pulumi.x.yaml")
    before, after = yaml.safe_load(text), yaml.safe_load(new)
    manifest = after["config"]["gpu-queues:kueue"].pop("manifest")
    assert manifest == {**PATH, "sha256": DIGEST}
    (before["config"].get("gpu-queues:kueue") or {}).pop("manifest", None)
    if not before["config"].get("gpu-queues:kueue"):
        before["config"].pop("gpu-queues:kueue", None)
        if not after["config"]["gpu-queues:kueue"]:
            del after["config"]["gpu-queues:kueue"]
    assert before == after
    for line in text.splitlines():  # comments and other keys survive
        if line.strip().startswith("#") or "secure:" in line or "encryptionsalt" in line:
            assert line in new.splitlines()
    assert pin_text(new, PATH, DIGEST, "Pulumi.x.yaml") == new


def test_a_digest_that_yaml_would_read_as_a_number_is_quoted():
    digest = "1" * 63 + "0"  # all digits: a plain scalar would be an int
    new = pin_text(UNUSUAL["quoted-key"], PATH, digest, "x")
    assert kueue_block(new)["manifest"]["sha256"] == digest


def test_duplicate_keys_are_refused_not_guessed():
    text = "config:\n  gpu-queues:kueue:\n    version: v0.18.3\n    version: v0.18.4\n"
    with pytest.raises(
        PinError, match=r'x cannot be edited safely: .*found duplicate key "version"'
    ):
        pin_text(text, PATH, DIGEST, "x")


def test_a_manifest_that_is_not_a_mapping_is_refused():
    with pytest.raises(PinError, match="must be mappings"):
        pin_text("config:\n  gpu-queues:kueue:\n    manifest: nope\n", PATH, DIGEST, "x")


# --- pin() on a project of its own -------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "toolchain").mkdir()
    shutil.copy(ROOT / "toolchain" / "pins.env", tmp_path / "toolchain" / "pins.env")
    for stack in ("dev", "staging", "prod", "local"):
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", tmp_path / f"Pulumi.{stack}.yaml")
    (tmp_path / "Pulumi.preinstalled.yaml").write_text(
        "config:\n  gpu-queues:kueue:\n    install: false\n"
    )
    (tmp_path / "Pulumi.older.yaml").write_text(
        "config:\n  gpu-queues:kueue:\n    version: v0.17.0\n"
    )
    (tmp_path / "Pulumi.mirror.yaml").write_text(
        "config:\n  gpu-queues:kueue:\n    manifest:\n"
        "      url: https://mirror.example/kueue/v0.18.3/manifests.yaml\n"
    )
    return tmp_path


def snapshot(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.glob("Pulumi.*.yaml"))}


def test_file_mode_pins_the_official_url_in_every_stack_that_installs_the_version(project):
    digest = hashlib.sha256(MANIFEST.read_bytes()).hexdigest()
    pins = {p.stack: p for p in pin(file=MANIFEST, root=project)}
    files = snapshot(project)
    url = release_url("v0.18.3")
    for stack in ("dev", "staging", "prod", "local"):
        assert kueue_block(files[f"Pulumi.{stack}.yaml"])["manifest"] == {
            "url": url,
            "sha256": digest,
        }
    assert kueue_block(files["Pulumi.mirror.yaml"])["manifest"] == {
        "url": "https://mirror.example/kueue/v0.18.3/manifests.yaml",
        "sha256": digest,
    }
    assert "keeps its mirror" in pins["mirror"].notes[0]
    assert files["Pulumi.preinstalled.yaml"].endswith("install: false\n")
    assert "does not install Kueue" in pins["preinstalled"].notes[0]
    assert "version: v0.17.0\n" in files["Pulumi.older.yaml"]
    assert "runs Kueue v0.17.0" in pins["older"].notes[0]
    # Pinning again changes nothing, and --check agrees.
    assert not any(p.changed for p in pin(file=MANIFEST, root=project))
    assert snapshot(project) == files


def test_check_writes_nothing(project):
    before = snapshot(project)
    pins = pin(file=MANIFEST, root=project, check=True)
    assert any(p.changed for p in pins)
    assert snapshot(project) == before


def test_a_manifest_that_fails_the_allowlist_is_never_pinned(project, tmp_path):
    docs = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    docs.append(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "x"}}
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(docs))
    before = snapshot(project)
    with pytest.raises(PinError, match="ClusterQueue x: ClusterQueue is a Kueue API object"):
        pin(file=bad, root=project)
    assert snapshot(project) == before


def test_one_broken_stack_file_stops_the_whole_pin(project):
    (project / "Pulumi.zz-broken.yaml").write_text(
        "config:\n  gpu-queues:kueue:\n    manifest: 3\n"
    )
    before = snapshot(project)
    broken = r"Pulumi\.zz-broken\.yaml: gpu-queues:kueue\.manifest is not a mapping"
    with pytest.raises(PinError, match=broken):
        pin(file=MANIFEST, root=project)
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.mkdir(), "it is a folder, not a regular file"),
        (lambda p: p.symlink_to(p.parent / "gone.yaml"), "no such file"),
    ],
    ids=["folder", "dangling-link"],
)
def test_a_folder_or_dangling_link_named_like_a_stack_file_stops_the_pin_clearly(
    project, make, says
):
    make(project / "Pulumi.zz-odd.yaml")
    before = {p.name: p.read_text() for p in sorted(project.glob("Pulumi.*.yaml")) if p.is_file()}
    with pytest.raises(PinError, match=f"^cannot read Pulumi.zz-odd.yaml: {says}; every"):
        pin(file=MANIFEST, root=project)
    assert {p.name: p.read_text() for p in project.glob("Pulumi.*.yaml") if p.is_file()} == before


def test_check_only_verifies_the_pinned_version(project):
    with pytest.raises(PinError, match=r"--check verifies the pinned version \(v0\.18\.3\)"):
        pin(version="v0.19.2", file=MANIFEST, root=project, check=True)


def test_cli_reports_errors_without_a_traceback(capsys):
    assert main(["--version", "v0.19.2", "--file", str(MANIFEST), "--check"]) == 1
    assert "--check verifies the pinned version" in capsys.readouterr().err
    assert main(["--version", "0.19.2", "--check"]) == 1
    assert "'0.19.2' is not a Kueue release (vX.Y.Z)" in capsys.readouterr().err


# --- moving the pin ---------------------------------------------------------------------------


def test_set_pinned_version_changes_only_that_line():
    text = (ROOT / "toolchain" / "pins.env").read_text()
    moved = set_pinned_version(text, "v0.19.2")
    assert [line for line in moved.splitlines() if line not in text.splitlines()] == [
        "KUEUE_VERSION=v0.19.2"
    ]
    assert set_pinned_version(moved, "v0.18.3") == text
    with pytest.raises(PinError, match="exactly one KUEUE_VERSION"):
        set_pinned_version("A=1\n", "v0.19.2")


def release_at(version: str) -> bytes:
    """The fixture release, retagged as `version` (what a release of that version ships)."""
    text = MANIFEST.read_text()
    return text.replace(
        "registry.k8s.io/kueue/kueue:v0.18.3", f"registry.k8s.io/kueue/kueue:{version}"
    ).encode()


def test_moving_the_pin_moves_every_stack_that_follows_it_and_says_what_changes(project):
    (project / "Pulumi.explicit.yaml").write_text(
        "config:\n  gpu-queues:kueue:\n    version: v0.18.3\n"
    )
    data = release_at("v0.19.2")
    digest = hashlib.sha256(data).hexdigest()
    path = {"path": ".kueue/v0.19.2/manifests.yaml"}
    pins = {p.stack: p for p in plan("v0.19.2", data, path, "v0.19.2 render", project)}
    for stack in ("dev", "staging", "prod", "local"):
        new = kueue_block(pins[stack].new_text)
        assert new["manifest"] == {**path, "sha256": digest}
        assert not any(a.required for a in pins[stack].advice)
    # dev and local leave the Configuration to the release: its new defaults reach them.
    for stack in ("dev", "local"):
        keys = {a.key for a in pins[stack].advice}
        assert {"manager.waitForPodsReady", "manager.integrations.frameworks"} <= keys
    # staging and prod set waitForPodsReady and their integrations: nothing changes for them.
    assert pins["staging"].advice == pins["prod"].advice == []
    # A stack that names its own version is left alone, told so.
    assert not pins["explicit"].changed and "runs Kueue v0.18.3" in pins["explicit"].notes[0]
    assert not pins["older"].changed
    # Nothing was written: plan only plans.
    assert "v0.18.3" in (project / "Pulumi.dev.yaml").read_text()


def test_a_gate_the_new_version_refuses_is_required_advice(project):
    dev = project / "Pulumi.dev.yaml"
    dev.write_text(
        dev.read_text().replace(
            "  gpu-queues:kueue:\n",
            "  gpu-queues:kueue:\n    manager:\n      featureGates: {LendingLimit: true}\n",
            1,
        )
    )
    data = release_at("v0.19.2")
    pins = {p.stack: p for p in plan("v0.19.2", data, {"path": "x"}, "render", project)}
    (required,) = [a for a in pins["dev"].advice if a.required]
    assert required.key == "manager.featureGates.LendingLimit"


def test_storage_refusals_apply_the_programs_upgrade_rule_to_the_two_releases():
    def crds_at(version: str, versions: list[str], storage: str) -> bytes:
        docs = [d for d in yaml.safe_load_all(release_at(version)) if d]
        for doc in docs:
            if doc["kind"] == "CustomResourceDefinition":
                schema = doc["spec"]["versions"][0].get("schema")
                doc["spec"]["versions"] = [
                    {
                        "name": v,
                        "served": True,
                        "storage": v == storage,
                        "schema": copy.deepcopy(schema),
                    }
                    for v in versions
                ]
        return yaml.safe_dump_all(docs).encode()

    newer = crds_at("v0.20.0", ["v1beta2", "v1"], "v1")
    at_v1beta2 = crds_at("v0.19.2", ["v1beta2"], "v1beta2")
    assert storage_refusals("v0.19.2", at_v1beta2, "v0.20.0", newer) == []
    # Back to a release that defines v1 but stores at v1beta2: crossing the change.
    knows_v1 = crds_at("v0.19.2", ["v1beta2", "v1"], "v1beta2")
    (refused,) = storage_refusals("v0.20.0", newer, "v0.19.2", knows_v1)
    assert "downgrading Kueue v0.20.0 -> v0.19.2 crosses a storage-version change" in refused
    # Back to one that does not even define v1: what v0.20.0 stored would be lost.
    (refused,) = storage_refusals("v0.20.0", newer, "v0.19.2", at_v1beta2)
    assert "still stores objects at v1" in refused


def test_a_crlf_stack_file_keeps_its_line_breaks_and_secure_value():
    """The pin is gpu_queues.config.yamledit's edit (promote's too): a file written on Windows
    stays CRLF
    throughout, its secure value and comments untouched."""
    text = (
        "encryptionsalt: v1:c2FsdA==:v1:AAAA\r\n"
        "config:\r\n"
        "  # the cluster\r\n"
        "  gpu-queues:kubeconfig:\r\n"
        "    secure: v1:AAAABBBBCCCC\r\n"
        "  gpu-queues:kueue:\r\n"
        "    manifest:  # pinned by make pin-kueue\r\n"
        "      path: .kueue/v0.18.3/manifests.yaml\r\n"
        "      sha256: " + "0" * 64 + "\r\n"
    )
    new = pin_text(text, PATH, DIGEST, "Pulumi.win.yaml")
    assert new.count("\n") == new.count("\r\n") == text.count("\r\n")
    assert kueue_block(new)["manifest"] == {**PATH, "sha256": DIGEST}
    unchanged = [line for line in text.split("\r\n") if "sha256" not in line]
    assert [line for line in new.split("\r\n") if "sha256" not in line] == unchanged


def test_a_stack_file_linked_from_outside_the_project_is_refused_and_nothing_written(
    project, tmp_path_factory
):
    """Issue 24, item 4: pin-kueue writes inside the project only; a link leading out is
    refused by name, before any file (this one or another stack's) is replaced."""
    outside = tmp_path_factory.mktemp("elsewhere") / "staging.yaml"
    outside.write_text((project / "Pulumi.staging.yaml").read_text())
    (project / "Pulumi.staging.yaml").unlink()
    (project / "Pulumi.staging.yaml").symlink_to(outside)
    before, outside_before = snapshot(project), outside.read_text()
    with pytest.raises(PinError, match=r"Pulumi\.staging\.yaml \(a link to .*elsewhere.*\) is "
                       r"outside the project"):  # fmt: skip
        pin(file=MANIFEST, root=project)
    assert snapshot(project) == before
    assert outside.read_text() == outside_before


def test_a_file_that_is_not_the_release_by_its_digests_is_pinned_with_a_warning(project, capsys):
    # the unit manifest is not the release v0.18.3: every stack would refuse it unless custom
    result = pin_release(file=MANIFEST, root=project)
    assert result.not_the_release is not None
    assert result.not_the_release.startswith(f"Kueue manifest {MANIFEST} differs from the release")
    assert main(["--file", str(MANIFEST), "--check"]) == 1  # the stacks pin the render
    assert "unless it sets gpu-queues:kueue.manifest.custom: true" in capsys.readouterr().err
