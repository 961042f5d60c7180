from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.config import yamledit
from gpu_queues.config.model import KueueConfig
from gpu_queues.pins import kueue_version
from gpu_queues.tools import promote, promotion_rules
from tests.unit.conftest import Write

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
SHA_NEW = "a" * 64
SHA_OLD = "b" * 64
MIRROR = "https://mirror.example.invalid/kueue"

TEAMS = """\
  gpu-queues:flavors:
    - name: gpu-flavor
      capacity: {cpu: 64, memory: 512Gi, nvidia.com/gpu: 8}
  gpu-queues:teams:
    - name: ml
      namespace: team-ml
      clusterQueue: ml-cq
      localQueue: gpu-queue
      resourceGroups:
        - coveredResources: [cpu, memory, nvidia.com/gpu]
          flavors:
            - name: gpu-flavor
              resources:
                cpu: {nominalQuota: 64}
                memory: {nominalQuota: 512Gi}
                nvidia.com/gpu: {nominalQuota: 8}
"""

SOURCE = f"""\
# dev: where changes land first
config:
  gpu-queues:kueue:
    version: v0.18.3
    manifest:
      url: {MIRROR}/manifests.yaml
      sha256: {SHA_NEW}
    controller: {{replicas: 1}}
    manager:
      waitForPodsReady:
        timeout: 10m   # tested here first
      featureGates: {{TopologyAwareScheduling: true}}
      managedJobsNamespaceSelector:
        matchLabels: {{env: dev}}
      manageJobsWithoutQueueName: true
{TEAMS}"""

TARGET = f"""\
# staging: keep this comment
config:
  gpu-queues:kueue:
    version: v0.17.0   # the old release
    readinessTimeoutSeconds: 600
    manifest:
      url: {MIRROR}/manifests.yaml
      sha256: {SHA_OLD}
    controller:
      replicas: 2
    manager:
      fairSharing: {{preemptionStrategies: [LessThanInitialShare]}}
      managedJobsNamespaceSelector:
        matchExpressions:
        - {{key: kubernetes.io/metadata.name, operator: In, values: [team-research]}}
  gpu-queues:flavors:
  - name: h100
    capacity: {{cpu: 192, memory: 2Ti, nvidia.com/gpu: 16}}   # staging's own hardware
  gpu-queues:teams:
  - name: research
    namespace: team-research
    clusterQueue: research-cq
    localQueue: gpu-queue
    resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
      - name: h100
        resources:
          cpu: {{nominalQuota: 96}}
          memory: {{nominalQuota: 1Ti}}
          nvidia.com/gpu: {{nominalQuota: 16}}
  gpu-queues:sharedStorage:
"""
# A flow mapping wrapped past 100 columns, as in Pulumi.staging.yaml: it must survive untouched.
TARGET += (
    "  - {volumeName: shared-volume-staging, claimName: shared-pvc, namespace: team-research, "
    "size: 200Gi, storageClass: shared-wekafs,\n    accessMode: ReadWriteMany}\n"
)

DEPLOYED = {"kueueVersion": "v0.18.3", "flavors": ["gpu-flavor"]}


def config_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())["config"]
    return data


def kueue_of(path: Path) -> dict[str, Any]:
    return config_of(path).get("gpu-queues:kueue") or {}


# --- what travels -----------------------------------------------------------------------------


def test_travelling_keys_are_copied_and_the_environment_keeps_its_own(
    write: Write, project: Path
) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    before = config_of(target)
    result = promote.promote("dev", "staging", DEPLOYED, project)

    kueue = kueue_of(target)
    assert kueue["version"] == "v0.18.3"
    assert kueue["manifest"] == {"url": f"{MIRROR}/manifests.yaml", "sha256": SHA_NEW}
    assert kueue["manager"]["waitForPodsReady"] == {"timeout": "10m"}
    assert kueue["manager"]["featureGates"] == {"TopologyAwareScheduling": True}
    # staging's own: its namespaces, its choice on queue-less jobs, its controller and timeout
    old = before["gpu-queues:kueue"]
    assert (
        kueue["manager"]["managedJobsNamespaceSelector"]
        == old["manager"]["managedJobsNamespaceSelector"]
    )
    assert "manageJobsWithoutQueueName" not in kueue["manager"]
    assert kueue["controller"] == {"replicas": 2}
    assert kueue["readinessTimeoutSeconds"] == 600
    # dev sets no fairSharing: staging keeps its own, and says so
    assert kueue["manager"]["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    assert any("fairSharing: dev does not set it; staging keeps" in k for k in result.kept)
    for key in ("gpu-queues:flavors", "gpu-queues:teams", "gpu-queues:sharedStorage"):
        assert config_of(target)[key] == before[key]
    # only the changed entries are rewritten: comments and other lines stay byte for byte
    text = target.read_text()
    assert text.startswith("# staging: keep this comment\n")
    assert TARGET[TARGET.index("  gpu-queues:flavors:") :] in text
    assert "timeout: 10m   # tested here first" in text
    assert "-    version: v0.17.0   # the old release\n" in result.diff()
    assert "+    version: v0.18.3   # the old release\n" in result.diff()
    changed = [line for line in result.diff().splitlines() if line[:1] in "+-"]
    assert not any("readinessTimeoutSeconds" in line or "replicas" in line for line in changed)


def test_a_source_without_manager_settings_promotes_without_flags(
    write: Write, project: Path
) -> None:
    # The committed dev sets no manager configuration while staging does (issue 16, item 4).
    write("dev", "config:\n" + TEAMS)
    target = write("staging", TARGET.replace("v0.17.0", kueue_version()))
    result = promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    kueue = kueue_of(target)
    assert kueue["manager"]["fairSharing"] == {"preemptionStrategies": ["LessThanInitialShare"]}
    assert any("kueue.manager.fairSharing" in k for k in result.kept)
    # dev follows the pin; staging named the pin explicitly: now it follows it too
    assert "version" not in kueue


def test_allow_unset_removes_what_the_source_does_not_set(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    result = promote.promote("dev", "staging", DEPLOYED, project, allow_unset=True)
    manager = kueue_of(target)["manager"]
    assert "fairSharing" not in manager
    assert "managedJobsNamespaceSelector" in manager  # never removed: staging's own
    assert any("kueue.manager.fairSharing is removed" in w for w in result.warnings)


def test_unset_version_in_source_unsets_it_in_target(write: Write, project: Path) -> None:
    write("dev", SOURCE.replace("    version: v0.18.3\n", ""))
    target = write("staging", TARGET)
    assert kueue_of(target)["version"] == "v0.17.0"
    result = promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    assert "version" not in kueue_of(target)  # staging now follows toolchain/pins.env, as dev
    assert "kueue.version: v0.17.0 -> unset" in result.changes


def test_every_kueue_key_has_a_promotion_rule() -> None:
    # A key added to the models must be classified before promotion copies or keeps it.
    def walk(model: Any, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        out = []
        for name, field in model.model_fields.items():
            path = (*prefix, field.alias or name)
            if promotion_rules.rule_for(path) is not None:
                continue
            inner = field.annotation
            args = [a for a in getattr(inner, "__args__", ()) if a is not type(None)]
            inner = args[0] if args else inner
            if hasattr(inner, "model_fields"):
                out += walk(inner, path)
            else:
                out.append(path)
        return out

    assert walk(KueueConfig, ()) == []


def test_a_key_without_a_rule_is_refused(
    write: Write, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    rules = tuple(r for r in promotion_rules.RULES if r.path != ("manager", "featureGates"))
    monkeypatch.setattr(promotion_rules, "RULES", rules)
    with pytest.raises(promote.PromotionError, match=r"kueue\.manager\.featureGates, which has no"):
        promote.promote("dev", "staging", DEPLOYED, project)
    assert target.read_text() == TARGET


def test_the_docs_table_states_each_rule() -> None:
    docs = (ROOT / "docs" / "promotion.md").read_text()
    rows = dict(re.findall(r"^\| `(kueue\.[A-Za-z0-9.]+)` \| ([^|]+) \|", docs, re.M))
    assert {r.dotted: r.rule.value for r in promotion_rules.RULES} == {
        k: v.strip() for k, v in rows.items()
    }


# --- the manifest checksum goes with its bytes --------------------------------------------


def test_checksum_is_copied_when_both_read_the_same_manifest(write: Write, project: Path) -> None:
    for where in (f"path: .kueue/{kueue_version()}/m.yaml", f"url: {MIRROR}/m.yaml", None):
        manifest = f"    manifest:\n      {where}\n" if where else "    manifest:\n"
        write("dev", f"config:\n  gpu-queues:kueue:\n{manifest}      sha256: {SHA_NEW}\n{TEAMS}")
        target = write(
            "staging", f"config:\n  gpu-queues:kueue:\n{manifest}      sha256: {SHA_OLD}\n"
        )
        promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
        assert kueue_of(target)["manifest"]["sha256"] == SHA_NEW, where


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (".kueue/v0.17.0/manifests.yaml", f".kueue/{kueue_version()}/manifests.yaml"),
        (f"{MIRROR}/v0.17.0/manifests.yaml", f"{MIRROR}/{kueue_version()}/manifests.yaml"),
    ],
)
def test_a_place_named_after_the_version_follows_it_with_its_checksum(
    write: Write, project: Path, old: str, new: str
) -> None:
    # `make pin-kueue` pins .kueue/<version>/manifests.yaml in every stack: the same place
    kind = "url" if old.startswith("https") else "path"
    write(
        "dev",
        f"config:\n  gpu-queues:kueue:\n    manifest:\n      {kind}: {new}\n"
        f"      sha256: {SHA_NEW}\n{TEAMS}",
    )
    target = write(
        "staging",
        f"config:\n  gpu-queues:kueue:\n    version: v0.17.0   # staging's\n    manifest:\n"
        f"      {kind}: {old}   # rendered by make pin-kueue\n      sha256: {SHA_OLD}\n",
    )
    promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    assert kueue_of(target) == {"manifest": {kind: new, "sha256": SHA_NEW}}
    assert f"{kind}: {new}   # rendered by make pin-kueue\n" in target.read_text()


def test_checksum_stays_when_the_manifests_differ(write: Write, project: Path) -> None:
    # dev reads the release URL; staging its rendered copy: each checksum is its own bytes'
    write("dev", f"config:\n  gpu-queues:kueue:\n    manifest: {{sha256: {SHA_NEW}}}\n{TEAMS}")
    path = f".kueue/{kueue_version()}/manifests.yaml"
    text = f"config:\n  gpu-queues:kueue:\n    manifest:\n      path: {path}\n"
    text += f"      sha256: {SHA_OLD}\n"
    target = write("staging", text)
    result = promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    assert result.noop and target.read_text() == text
    assert any("sha256: not copied" in k for k in result.kept)


@pytest.mark.parametrize(
    ("manifest", "key"),
    [
        ("path: .kueue/v0.17.0/manifests.yaml", "kueue.manifest.path"),
        (f"url: {MIRROR}/v0.17.0/manifests.yaml", "kueue.manifest.url"),
        (f"url: {MIRROR}/kueue-v0.17.0.yaml\n      sha256: {SHA_OLD}", "kueue.manifest.url"),
        (f"sha256: {SHA_OLD}", "kueue.manifest.sha256"),
    ],
)
def test_a_version_change_that_leaves_an_own_key_stale_is_refused(
    write: Write, project: Path, manifest: str, key: str
) -> None:
    write("dev", f"config:\n  gpu-queues:kueue:\n    manifest:\n      path: dev.yaml\n{TEAMS}")
    text = f"config:\n  gpu-queues:kueue:\n    version: v0.17.0\n    manifest:\n      {manifest}\n"
    target = write("staging", text)
    with pytest.raises(promote.PromotionError, match=re.escape(key)):
        promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    assert target.read_text() == text


def test_a_source_without_checksum_cannot_leave_a_stale_one(write: Write, project: Path) -> None:
    write("dev", "config:\n" + TEAMS)  # the release URL, no checksum, the pinned version
    text = (
        f"config:\n  gpu-queues:kueue:\n    version: v0.17.0\n    manifest: {{sha256: {SHA_OLD}}}\n"
    )
    write("staging", text)
    with pytest.raises(
        promote.PromotionError, match=r"pins kueue\.manifest\.sha256 for the v0\.17"
    ):
        promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)


def test_an_own_manifest_already_named_for_the_new_version_is_accepted(
    write: Write, project: Path
) -> None:
    write("dev", "config:\n" + TEAMS)
    path = f".kueue/{kueue_version()}/manifests.yaml"  # re-pinned ahead of the promotion
    target = write(
        "staging",
        f"config:\n  gpu-queues:kueue:\n    version: v0.17.0\n    manifest:\n"
        f"      path: {path}\n      sha256: {SHA_OLD}\n",
    )
    promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    assert kueue_of(target) == {"manifest": {"path": path, "sha256": SHA_OLD}}


# --- deployed first, all or nothing -------------------------------------------------------


def test_refuses_a_version_the_source_has_not_deployed(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    with pytest.raises(
        promote.PromotionError,
        match=r"refusing to promote Kueue v0\.18\.3: stack 'dev' has deployed v0\.17\.0",
    ):
        promote.promote("dev", "staging", {"kueueVersion": "v0.17.0"}, project)
    assert target.read_text() == TARGET


def test_refuses_when_the_source_was_never_deployed(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    with pytest.raises(promote.PromotionError, match="has no kueueVersion output"):
        promote.promote("dev", "staging", {}, project)
    assert target.read_text() == TARGET


def test_outputs_are_fetched_only_when_something_changes(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    write("staging", TARGET)
    asked: list[str] = []

    def fetch(stack: str) -> dict[str, Any]:
        asked.append(stack)
        return DEPLOYED

    promote.promote("dev", "staging", fetch, project)
    assert asked == ["dev"]
    again = promote.promote("dev", "staging", fetch, project)
    assert again.noop and again.diff() == ""
    assert asked == ["dev"]


def test_a_column_zero_comment_inside_the_block_does_not_cut_the_promotion(
    write: Write, project: Path
) -> None:
    # Issue 10 A2: the block used to end at the comment; one key of three was written, exit 0.
    write("dev", SOURCE)
    target = write(
        "staging",
        TARGET.replace(
            "    readinessTimeoutSeconds: 600\n",
            "# how long staging waits:\n    readinessTimeoutSeconds: 600\n",
        ),
    )
    promote.promote("dev", "staging", DEPLOYED, project)
    kueue = kueue_of(target)
    assert kueue["version"] == "v0.18.3"
    assert kueue["manifest"]["sha256"] == SHA_NEW
    assert kueue["manager"]["featureGates"] == {"TopologyAwareScheduling": True}
    assert "# how long staging waits:\n    readinessTimeoutSeconds: 600\n" in target.read_text()


_EDIT = yamledit.edit


def _truncating_editor(text: str, edits: Any, keep: int = 1) -> str:
    """The editor promotion used before: it cut the block at a column-0 comment."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "gpu-queues:kueue:" in line)
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    first = dict(list(edits.items())[:1])
    block = _EDIT("".join(lines[start:end]), {p[1:]: v for p, v in first.items()}, 0)
    return "".join(lines[:start]) + block + "".join(lines[end:])


def test_a_partial_edit_is_refused_and_nothing_is_written(
    write: Write, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever the editor does, the parse-back check refuses a text that misses a promoted
    # key or changes anything else, naming the keys.
    write("dev", SOURCE)
    text = TARGET.replace(
        "    readinessTimeoutSeconds: 600\n", "# cut here\n    readinessTimeoutSeconds: 600\n"
    )
    target = write("staging", text)
    monkeypatch.setattr(yamledit, "edit", _truncating_editor)
    with pytest.raises(promote.PromotionError, match=r"would also change or miss .*manifest"):
        promote.promote("dev", "staging", DEPLOYED, project)
    assert target.read_text() == text


def test_the_file_is_replaced_atomically_with_its_mode(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    os.chmod(target, 0o640)
    inode = target.stat().st_ino
    promote.promote("dev", "staging", DEPLOYED, project)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.stat().st_ino != inode  # a new file renamed over the old one
    assert sorted(p.name for p in project.iterdir()) == ["Pulumi.dev.yaml", "Pulumi.staging.yaml"]


def test_a_file_edited_during_the_promotion_is_not_overwritten(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)

    def fetch(stack: str) -> dict[str, Any]:
        target.write_text(TARGET + "# edited meanwhile\n")
        return DEPLOYED

    with pytest.raises(promote.PromotionError, match="changed while promoting"):
        promote.promote("dev", "staging", fetch, project)
    assert target.read_text().endswith("# edited meanwhile\n")


# --- the command --------------------------------------------------------------------------


def test_noop_promotion_leaves_the_file_alone(
    write: Write, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write("dev", SOURCE)
    target = write("prod", SOURCE.replace("# dev: where", "# prod: where"))
    before = target.read_text()
    code = promote.main(["dev", "prod", "--root", str(project), "--outputs", "/nonexistent"])
    assert code == 2  # an unreadable outputs file is an input error
    outputs = project / "outputs.json"
    outputs.write_text(json.dumps({"kueueVersion": "v0.17.0"}))  # not even checked: no-op
    assert promote.main(["dev", "prod", "--root", str(project), "--outputs", str(outputs)]) == 0
    assert "nothing to do" in capsys.readouterr().out
    assert target.read_text() == before


def test_dry_run_shows_the_diff_and_writes_nothing(
    write: Write, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    outputs = project / "outputs.json"
    outputs.write_text(json.dumps(DEPLOYED))
    args = ["dev", "staging", "--root", str(project), "--outputs", str(outputs), "--dry-run"]
    assert promote.main(args) == 0
    out = capsys.readouterr().out
    assert "--- a/Pulumi.staging.yaml\n+++ b/Pulumi.staging.yaml\n" in out
    assert f"+      sha256: {SHA_NEW}" in out
    assert "kept: kueue.manager.fairSharing" in out
    assert "would promote dev -> staging" in out
    assert target.read_text() == TARGET


def test_refusal_exits_1_with_the_reason(
    write: Write, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write("dev", SOURCE)
    write("staging", TARGET)
    outputs = project / "outputs.json"
    outputs.write_text(json.dumps({"kueueVersion": "v0.17.0"}))
    assert promote.main(["dev", "staging", "--root", str(project), "--outputs", str(outputs)]) == 1
    assert "refusing to promote Kueue v0.18.3" in capsys.readouterr().err


def test_target_without_a_kueue_block_gets_one(write: Write, project: Path) -> None:
    write("staging", TARGET.replace(f"url: {MIRROR}/manifests.yaml", "path: k.yaml"))
    target = write("dev", "# dev\nconfig:\n" + TEAMS)
    promote.promote("staging", "dev", {"kueueVersion": "v0.17.0"}, project)
    text = target.read_text()
    assert text.startswith("# dev\nconfig:\n  gpu-queues:kueue:\n    version: v0.17.0\n")
    assert text.endswith(TEAMS)
    assert kueue_of(target) == {
        "version": "v0.17.0",
        "manager": {"fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}},
    }


@pytest.mark.parametrize(
    "text",
    [
        "",
        "encryptionsalt: v1:c2FsdA==:v1:aXY=:Y3Q=\n",
        "# nothing but a comment",
        "config:\n",
        "config: {}\n",
        "encryptionsalt: v1:c2FsdA==:v1:aXY=:Y3Q=\nconfig:\n  other:key: 1",
    ],
)
def test_targets_with_no_config_get_one(write: Write, project: Path, text: str) -> None:
    write("dev", f"config:\n  gpu-queues:kueue:\n    version: v0.17.0\n{TEAMS}")
    target = write("staging", text)
    promote.promote("dev", "staging", {"kueueVersion": "v0.17.0"}, project)
    after = yaml.safe_load(target.read_text())
    assert after["config"]["gpu-queues:kueue"] == {"version": "v0.17.0"}
    before = yaml.safe_load(text) or {}
    assert {k: v for k, v in after.items() if k != "config"} == {
        k: v for k, v in before.items() if k != "config"
    }
    removed = [
        line
        for line in difflib.ndiff(text.splitlines(), target.read_text().splitlines())
        if line.startswith("- ")
    ]
    assert removed in ([], ["- config: {}"])  # every other line of the file is kept


def test_unknown_stack_and_same_stack_are_refused(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    with pytest.raises(promote.PromotionError, match="unknown stack 'qa'"):
        promote.promote("dev", "qa", DEPLOYED, project)
    with pytest.raises(promote.PromotionError, match="same stack"):
        promote.promote("dev", "dev", DEPLOYED, project)


def test_invalid_target_config_is_refused(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    write("staging", TARGET.replace("replicas: 2", "replicas: 0"))
    with pytest.raises(
        promote.PromotionError, match=r"(?s)Pulumi.staging.yaml is not a valid.*replicas"
    ):
        promote.promote("dev", "staging", DEPLOYED, project)


def test_policy_pack_version_is_read_from_the_pack() -> None:
    assert (
        promote.policy_pack_version() == yaml.safe_load(promote.POLICY_PACK.read_text())["version"]
    )


# --- the committed stacks -----------------------------------------------------------------


@pytest.fixture
def committed(tmp_path: Path) -> Path:
    for stack in ("dev", "staging", "prod"):
        shutil.copy(ROOT / f"Pulumi.{stack}.yaml", tmp_path / f"Pulumi.{stack}.yaml")
    return tmp_path


def _own(path: Path) -> dict[tuple[str, ...], Any]:
    """Everything of a stack file that no rule lets travel."""
    doc = yaml.safe_load(path.read_text())
    kueue = (doc.get("config") or {}).get("gpu-queues:kueue") or {}
    own = {("doc", k): v for k, v in doc.items() if k != "config"}
    own |= {("config", k): v for k, v in doc["config"].items() if k != "gpu-queues:kueue"}
    for rule in promotion_rules.RULES:
        if rule.rule is promotion_rules.Rule.STAYS:
            own[rule.path] = yamledit.get(kueue, rule.path)
    return own


def _deployed(path: Path) -> dict[str, str]:
    kueue = yaml.safe_load(path.read_text())["config"].get("gpu-queues:kueue") or {}
    return {"kueueVersion": kueue.get("version", kueue_version())}


def test_committed_stacks_promote_dev_staging_prod_without_flags(committed: Path) -> None:
    own = {s: _own(committed / f"Pulumi.{s}.yaml") for s in ("dev", "staging", "prod")}
    outputs = committed / "outputs.json"
    for source, target in (("dev", "staging"), ("staging", "prod")):
        outputs.write_text(json.dumps(_deployed(committed / f"Pulumi.{source}.yaml")))
        args = [source, target, "--root", str(committed), "--outputs", str(outputs)]
        assert promote.main(args) == 0, (source, target)
    for stack in ("dev", "staging", "prod"):
        assert _own(committed / f"Pulumi.{stack}.yaml") == own[stack], stack


def test_a_change_tested_in_dev_reaches_prod_and_each_keeps_its_own(committed: Path) -> None:
    dev = committed / "Pulumi.dev.yaml"
    dev.write_text(
        yamledit.edit(
            dev.read_text(),
            {
                ("config", "gpu-queues:kueue", "manager", "featureGates"): {
                    "TopologyAwareScheduling": True
                },
                ("config", "gpu-queues:kueue", "manager", "waitForPodsReady"): {"timeout": "5m"},
                ("config", "gpu-queues:kueue", "manager", "managedJobsNamespaceSelector"): {
                    "matchLabels": {"env": "dev"}
                },
            },
        )
    )
    own = {s: _own(committed / f"Pulumi.{s}.yaml") for s in ("dev", "staging", "prod")}
    for source, target in (("dev", "staging"), ("staging", "prod")):
        result = promote.promote(
            source, target, _deployed(committed / f"Pulumi.{source}.yaml"), committed
        )
        assert not result.noop
    for stack in ("staging", "prod"):
        manager = kueue_of(committed / f"Pulumi.{stack}.yaml")["manager"]
        assert manager["featureGates"] == {"TopologyAwareScheduling": True}
        assert manager["waitForPodsReady"] == {"timeout": "5m"}
    for stack in ("dev", "staging", "prod"):
        assert _own(committed / f"Pulumi.{stack}.yaml") == own[stack], stack


def test_a_linked_stack_file_stays_a_link(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    real = project / "envs" / "staging.yaml"
    real.parent.mkdir()
    real.write_text(TARGET)
    (project / "Pulumi.staging.yaml").symlink_to(real)
    promote.promote("dev", "staging", DEPLOYED, project)
    assert (project / "Pulumi.staging.yaml").is_symlink()
    assert kueue_of(real)["version"] == "v0.18.3"


def test_a_stack_file_linked_from_outside_the_project_is_never_replaced(
    write: Write, project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Issue 24, item 4: a link inside the project is written through (above); one that
    leads out of it is refused by name and the file it names is left as it was."""
    write("dev", SOURCE)
    outside = tmp_path_factory.mktemp("elsewhere") / "staging.yaml"
    outside.write_text(TARGET)
    (project / "Pulumi.staging.yaml").symlink_to(outside)
    with pytest.raises(promote.PromotionError, match=r"a link to .*elsewhere.* is outside"):
        promote.promote("dev", "staging", DEPLOYED, project)
    assert outside.read_text() == TARGET
