"""Promotion on the sandbox: `local` (deployed by the session) is promoted into a second stack,
`local-promo`, whose own names keep it clear of local's cluster-scoped objects; then the
target is deployed with `pulumi up` and destroyed. The source's outputs come from the real
CLI (`pulumi stack output --json -s local`), as in `make promote`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from gpu_queues.config.stackfile import parse_document
from gpu_queues.pins import kueue_version
from gpu_queues.tools import promote, quota_diff
from sandbox import pulumi_stack as stack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TARGET = "local-promo"
LOCAL_KUEUE = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())["config"]["gpu-queues:kueue"]
OLD_VERSION = "v0.17.0"
# local's manifest place, for the old version: the same place, so promotion moves the path
# (when it names the version, as .kueue/<version>/manifests.yaml does) and its checksum
OLD_PATH = LOCAL_KUEUE["manifest"]["path"].replace(kueue_version(), OLD_VERSION)
# Kueue is installed by `local`; this stack only waits for it. Its kueue.version and checksum
# are stale on purpose: promotion replaces them with local's (the pinned release).
TARGET_CONFIG = f"""\
# e2e: promotion target next to `local`, with names of its own
config:
  gpu-queues:kueue:
    install: false   # local installed Kueue: never a second copy in one cluster
    version: {OLD_VERSION}
    manifest:
      path: {OLD_PATH}
      sha256: "{"0" * 64}"
    readinessTimeoutSeconds: 120
  gpu-queues:flavors:
    - name: promo-gpu
      capacity: {{cpu: 8, memory: 64Gi, nvidia.com/gpu: 2}}
  gpu-queues:teams:
    - name: promo
      namespace: team-promo
      clusterQueue: promo-cq
      localQueue: promo-queue
      resourceGroups:
        - coveredResources: [cpu, memory, nvidia.com/gpu]
          flavors:
            - name: promo-gpu
              resources:
                cpu: {{nominalQuota: 8}}
                memory: {{nominalQuota: 64Gi}}
                nvidia.com/gpu: {{nominalQuota: 2}}
"""


@pytest.fixture
def project(tmp_path: Path, deployed: subprocess.CompletedProcess[str]) -> Iterator[Path]:
    """Stack files for the promotion: local's committed one and the target's."""
    shutil.copy(ROOT / "Pulumi.local.yaml", tmp_path / "Pulumi.local.yaml")
    (tmp_path / f"Pulumi.{TARGET}.yaml").write_text(TARGET_CONFIG)
    yield tmp_path
    done = stack.pulumi(
        "destroy",
        "--yes",
        stack=TARGET,
        source=tmp_path / f"Pulumi.{TARGET}.yaml",
        check=False,
        capture=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    stack.pulumi("stack", "rm", "--yes", stack=TARGET, check=False, capture=True)


def test_promote_local_into_a_second_stack_then_up(project: Path) -> None:
    outputs = promote.fetch_outputs("local", ROOT)  # the real CLI, as `make promote` does
    result = promote.promote("local", TARGET, lambda s: promote.fetch_outputs(s, ROOT), project)

    assert not result.noop
    assert "-    version: v0.17.0\n" in result.diff()
    kueue = yaml.safe_load((project / f"Pulumi.{TARGET}.yaml").read_text())["config"][
        "gpu-queues:kueue"
    ]
    # local follows the pinned version and pins its manifest: so does the target now, and
    # what is the target's own (install: false, its timeout) is untouched
    assert kueue == {
        "install": False,
        "manifest": LOCAL_KUEUE["manifest"],
        "readinessTimeoutSeconds": 120,
    }

    done = stack.pulumi(
        "up",
        "--yes",
        "--skip-preview",
        stack=TARGET,
        source=project / f"Pulumi.{TARGET}.yaml",
        check=False,
        capture=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    deployed = promote.fetch_outputs(TARGET, ROOT)
    assert deployed["kueueVersion"] == outputs["kueueVersion"]
    assert deployed["clusterQueues"] == {"promo": "promo-cq"}

    again = promote.promote("local", TARGET, lambda s: promote.fetch_outputs(s, ROOT), project)
    assert again.noop


def test_promotion_refuses_a_version_local_has_not_deployed(project: Path) -> None:
    source = project / "Pulumi.local.yaml"
    source.write_text(
        source.read_text().replace(
            "  gpu-queues:kueue:\n", "  gpu-queues:kueue:\n    version: v0.99.0\n", 1
        )
    )
    before = (project / f"Pulumi.{TARGET}.yaml").read_text()
    with pytest.raises(promote.PromotionError, match=r"refusing to promote Kueue v0\.99\.0"):
        promote.promote("local", TARGET, lambda s: promote.fetch_outputs(s, ROOT), project)
    assert (project / f"Pulumi.{TARGET}.yaml").read_text() == before


def test_tools_read_the_stack_file_the_cli_wrote_with_its_secret(
    tmp_path: Path, deployed: subprocess.CompletedProcess[str]
) -> None:
    # The sandbox's stack file is written by the real CLI: `config set --secret --path
    # gpu-queues:kubernetes.kubeconfig` (issue 10 A1). The tools read it and never decrypt it.
    written = (stack.SHADOW / "Pulumi.local.yaml").read_text()
    secret = parse_document(written, "local")["config"]["gpu-queues:kubernetes"]["kubeconfig"]
    shutil.copy(stack.SHADOW / "Pulumi.local.yaml", tmp_path / "Pulumi.local.yaml")
    shutil.copy(ROOT / "Pulumi.local.yaml", tmp_path / "Pulumi.committed.yaml")
    (tmp_path / f"Pulumi.{TARGET}.yaml").write_text(TARGET_CONFIG)
    assert quota_diff.main(["committed", "local", "--root", str(tmp_path)]) == 0
    result = promote.promote("local", TARGET, lambda s: promote.fetch_outputs(s, ROOT), tmp_path)
    assert not result.noop
    assert secret.ciphertext not in result.diff()
    assert (tmp_path / "Pulumi.local.yaml").read_text() == written
