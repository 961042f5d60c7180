"""What the what-if deploys on its sandbox: the stack file at the work tree or a revision,
with only the real cluster's connection removed and waitForPodsReady's timeout pushed out
of reach (and said so); the sandbox is shaped from it by the rehearsal's code, which
refuses what it cannot shape before any sandbox is touched."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.pins import read_pins
from gpuq import whatif
from sandbox import fake_cluster, rehearse
from tests.conftest import ROOT
from tests.tools.conftest import Write, git

pytestmark = pytest.mark.unit

STAGING = (ROOT / "Pulumi.staging.yaml").read_text()


def test_the_sandbox_gets_the_stack_file_without_the_real_cluster_connection() -> None:
    doc = yaml.safe_load(STAGING)
    doc["encryptionsalt"] = "v1:abc"
    doc["config"]["gpu-queues:kubernetes"] = {"kubeconfig": {"secure": "v1:xyz"}, "context": "p"}
    text, config, notes = whatif.sandbox_stack_file("staging", yaml.safe_dump(doc), "here")
    out = yaml.safe_load(text)
    assert "gpu-queues:kubernetes" not in out["config"]
    # Everything else as written, apart from the pods-ready timeout.
    ready = out["config"]["gpu-queues:kueue"]["manager"].pop("waitForPodsReady")
    original = doc["config"]["gpu-queues:kueue"]["manager"].pop("waitForPodsReady")
    assert ready == {**original, "timeout": whatif.PODS_READY_TIMEOUT}
    del doc["config"]["gpu-queues:kubernetes"]
    assert out == doc
    assert [t.name for t in config.teams] == ["research", "vision", "nlp"]
    (note,) = notes
    assert "after 10m is evicted and requeued (at most 5 times, then deactivated)" in note


def test_a_stack_without_waitforpodsready_is_deployed_unchanged() -> None:
    text = (ROOT / "Pulumi.local.yaml").read_text()
    out, _, notes = whatif.sandbox_stack_file("local", text, "here")
    assert yaml.safe_load(out) == yaml.safe_load(text) and notes == []


def _rename_a100_to_sandbox_system(c: dict) -> None:
    c["gpu-queues:flavors"][1]["name"] = "sandbox-system"
    for team in c["gpu-queues:teams"]:
        team["resourceGroups"][0]["flavors"][1]["name"] = "sandbox-system"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda c: c["gpu-queues:kueue"].update(version="v0.17.0"), "runs Kueue v0.17.0"),
        (lambda c: c["gpu-queues:kueue"].update(install=False), "does not install Kueue"),
        (lambda c: c["gpu-queues:teams"][0].update(clusterQueue="Bad_Name"), "invalid"),
        # A valid stack whose fake node would take the system node's name: fake_cluster's
        # refusal, before any sandbox is touched.
        (_rename_a100_to_sandbox_system, "node names clash: sandbox-system-0"),
    ],
)
def test_stacks_the_sandbox_cannot_replay_are_refused_with_the_reason(
    change, words, repo: Path, write: Write, tmp_path: Path
) -> None:
    doc = yaml.safe_load(STAGING)
    change(doc["config"])
    write("staging", yaml.safe_dump(doc))
    with pytest.raises(whatif.WhatIfError, match=words):
        whatif.load_side("new", "staging", repo, None, tmp_path)
    assert read_pins()["KUEUE_VERSION"] != "v0.17.0"


def test_the_sandbox_is_shaped_and_deployed_by_the_rehearsals_code(
    repo: Path, write: Write, tmp_path: Path
) -> None:
    doc = yaml.safe_load(STAGING)
    doc["encryptionsalt"] = "v1:abc"
    doc["config"]["gpu-queues:kueue"]["manifest"] = {
        "path": "nowhere/manifests.yaml",
        "sha256": "0" * 64,
    }
    write("staging", yaml.safe_dump(doc))
    side = whatif.load_side("new", "staging", repo, None, tmp_path)
    # The shape the sandbox gets is fake_cluster's for the stack: staging's two nodes.
    shape = fake_cluster.shape_of("staging", side.shape_file, side.config)
    assert shape.flavor_nodes == {"h100": 1, "a100": 1}
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text("kind: List\n")
    deployed, notes = rehearse.sandbox_stack_file(
        "staging", side.shape_file, side.config, tmp_path / "out", rendered
    )
    out = yaml.safe_load(deployed.read_text())
    assert set(out) == {"config"}  # no encryption salt: the sandbox's stack has its own
    assert out["config"]["gpu-queues:kueue"]["manifest"]["path"] == str(rendered)
    assert any(n.startswith("kueue.manifest nowhere/manifests.yaml") for n in notes)


def test_base_is_the_stack_file_at_the_revision(repo: Path, write: Write) -> None:
    write("staging", STAGING)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    moved = STAGING.replace(
        "nvidia.com/gpu: {nominalQuota: 4, borrowingLimit: 4, lendingLimit: 2}",
        "nvidia.com/gpu: {nominalQuota: 3, borrowingLimit: 4, lendingLimit: 2}",
    )
    assert moved != STAGING
    write("staging", moved)
    base = whatif.load_side("base", "staging", repo, "HEAD", repo / "work")
    new = whatif.load_side("new", "staging", repo, None, repo / "work")
    gpu = "nvidia.com/gpu"
    quota = lambda side: side.config.teams[0].resource_groups[0].flavors[0].resources[gpu]  # noqa: E731
    assert (quota(base).nominal_quota, quota(new).nominal_quota) == ("4", "3")
    assert base.label == f"staging@{git(repo, 'rev-parse', 'HEAD')[:10]}"
    assert new.label == "staging (work tree)"
    with pytest.raises(whatif.WhatIfError, match="not a commit"):
        whatif.load_side("base", "staging", repo, "no-such-rev", repo / "work")
    with pytest.raises(whatif.WhatIfError, match="unknown stack 'prod'"):
        whatif.load_side("new", "prod", repo, None, repo / "work")


def test_a_missing_workloads_path_is_an_error_before_any_sandbox(tmp_path: Path, capsys) -> None:
    code = whatif.main(["--stack", "staging", "--workloads", str(tmp_path / "none")])
    assert code == 2 and "no workloads at" in capsys.readouterr().err
