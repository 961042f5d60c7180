from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.pins import kueue_version
from gpuq import promote
from tests.tools.conftest import Write

pytestmark = pytest.mark.unit

SHA_NEW = "a" * 64
SHA_OLD = "b" * 64

SOURCE = f"""\
# dev: where changes land first
config:
  gpu-queues:kueue:
    version: v0.18.3
    manifest:
      sha256: {SHA_NEW}
    manager:
      waitForPodsReady:
        timeout: 10m   # tested here first
  gpu-queues:flavors:
    - name: gpu-flavor
      capacity: {{cpu: 64, memory: 512Gi, nvidia.com/gpu: 8}}
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
                cpu: {{nominalQuota: 64}}
                memory: {{nominalQuota: 512Gi}}
                nvidia.com/gpu: {{nominalQuota: 8}}
"""

TARGET = f"""\
# staging: keep this comment
config:
  gpu-queues:kueue:
    version: v0.17.0   # the old release
    readinessTimeoutSeconds: 600
    manifest:
      url: https://mirror.example.invalid/kueue/v0.17.0/manifests.yaml
      sha256: {SHA_OLD}
    controller:
      replicas: 2
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


def test_promotion_copies_version_checksum_and_manager_only(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    before = config_of(target)
    result = promote.promote("dev", "staging", DEPLOYED, project)
    after = config_of(target)

    kueue = after["gpu-queues:kueue"]
    assert kueue["version"] == "v0.18.3"
    assert kueue["manifest"]["sha256"] == SHA_NEW
    assert kueue["manager"] == {"waitForPodsReady": {"timeout": "10m"}}
    # the environment's own values stay
    assert kueue["manifest"]["url"] == before["gpu-queues:kueue"]["manifest"]["url"]
    assert kueue["readinessTimeoutSeconds"] == 600
    assert kueue["controller"] == {"replicas": 2}
    for key in ("gpu-queues:flavors", "gpu-queues:teams", "gpu-queues:sharedStorage"):
        assert after[key] == before[key]
    # comments and the untouched lines are byte for byte the same
    text = target.read_text()
    assert text.startswith("# staging: keep this comment\n")
    assert "# staging's own hardware" in text
    assert TARGET[TARGET.index("  gpu-queues:flavors:") :] in text
    assert "timeout: 10m   # tested here first" in text
    assert "-    version: v0.17.0   # the old release\n" in result.diff()
    # the comment beside the key stays with the key
    assert "+    version: v0.18.3   # the old release\n" in result.diff()
    assert any("url still names v0.17.0" in w for w in result.warnings)


def test_unset_version_in_source_unsets_it_in_target(write: Write, project: Path) -> None:
    write("dev", SOURCE.replace("    version: v0.18.3\n", ""))
    target = write("staging", TARGET)
    promote.promote("dev", "staging", {"kueueVersion": kueue_version()}, project)
    kueue = config_of(target)["gpu-queues:kueue"]
    assert "version" not in kueue  # staging now follows toolchain/pins.env, as dev does


def test_refuses_a_version_the_source_has_not_deployed(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    with pytest.raises(
        promote.PromotionError,
        match=r"refusing to promote Kueue v0\.18\.3: "
        r"stack 'dev' has deployed v0\.17\.0",
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
    assert out.startswith("--- a/Pulumi.staging.yaml\n+++ b/Pulumi.staging.yaml\n")
    assert f"+      sha256: {SHA_NEW}" in out
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


def test_dropping_a_manager_config_needs_allow_unset(write: Write, project: Path) -> None:
    write("dev", SOURCE)
    target = write("staging", TARGET)
    promote.promote("dev", "staging", DEPLOYED, project)  # staging now has dev's manager
    write(
        "dev",
        SOURCE.replace(
            "    manager:\n      waitForPodsReady:\n        timeout: 10m   # tested here first\n",
            "",
        ),
    )
    with pytest.raises(promote.PromotionError, match=r"would drop staging's kueue\.manager"):
        promote.promote("dev", "staging", DEPLOYED, project)
    result = promote.promote("dev", "staging", DEPLOYED, project, allow_unset=True)
    assert "manager" not in config_of(target)["gpu-queues:kueue"]
    assert any("kueue.manager is removed" in w for w in result.warnings)


def test_target_without_a_kueue_block_gets_one(write: Write, project: Path) -> None:
    write("staging", TARGET)
    dev = SOURCE.split("  gpu-queues:flavors:")[1]
    target = write("dev", "# dev\nconfig:\n  gpu-queues:flavors:" + dev)
    promote.promote("staging", "dev", {"kueueVersion": "v0.17.0"}, project)
    text = target.read_text()
    assert text.startswith("# dev\nconfig:\n  gpu-queues:kueue:\n    version: v0.17.0")
    kueue = config_of(target)["gpu-queues:kueue"]
    assert kueue == {"version": "v0.17.0", "manifest": {"sha256": SHA_OLD}}


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


def test_real_dev_to_staging_refuses_to_drop_staging_manager() -> None:
    # dev sets no manager configuration; staging's would be lost without --allow-unset
    with pytest.raises(promote.PromotionError, match=r"kueue\.manager"):
        promote.plan("dev", "staging")


def test_real_staging_to_prod_is_a_noop() -> None:
    assert promote.plan("staging", "prod").noop


def test_policy_pack_version_is_read_from_the_pack() -> None:
    assert (
        promote.policy_pack_version() == yaml.safe_load(promote.POLICY_PACK.read_text())["version"]
    )
