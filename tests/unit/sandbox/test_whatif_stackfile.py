"""What the what-if deploys on its sandbox: the stack file at the work tree or a revision,
with only the real cluster's connection removed and waitForPodsReady's timeout pushed out
of reach (and said so), at the Kueue release it resolves to there (its own kueue.version,
else toolchain/pins.env of the same tree); the sandbox is shaped from it by the rehearsal's
code, which refuses what it cannot shape before any sandbox is touched."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from gpu_queues.kueue.versions import supported
from gpu_queues.pins import PINS_FILE, read_pins
from gpu_queues.release.pin import set_pinned_version
from gpu_queues.whatif import sides as whatif
from sandbox import kueue_pod
from sandbox import shape as fake_cluster
from sandbox.rehearse import deploy as rehearse
from sandbox.replay import cli as sandbox_cli
from tests.conftest import ROOT
from tests.unit.conftest import Write, git

pytestmark = pytest.mark.unit

STAGING = (ROOT / "Pulumi.staging.yaml").read_text()
OLDEST, NEWEST = supported()[0], supported()[-1]


def pin(project: Path, version: str) -> None:
    """toolchain/pins.env of the project: the real one, with KUEUE_VERSION=`version`."""
    (project / "toolchain").mkdir(exist_ok=True)
    (project / "toolchain" / "pins.env").write_text(
        set_pinned_version(PINS_FILE.read_text(), version)
    )


def pin_moved(repo: Path, before: str, after: str) -> None:
    """A base commit pinning `before`; the work tree pins `after` (a PR moving the pin)."""
    pin(repo, before)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    pin(repo, after)


@pytest.fixture(autouse=True)
def pinned(project: Path) -> None:
    """Every project carries the real pins, as the repository does."""
    pin(project, read_pins()["KUEUE_VERSION"])


def test_the_sandbox_gets_the_stack_file_without_the_real_cluster_connection() -> None:
    doc = yaml.safe_load(STAGING)
    doc["encryptionsalt"] = "v1:abc"
    doc["config"]["gpu-queues:kubernetes"] = {"kubeconfig": {"secure": "v1:xyz"}, "context": "p"}
    text, config, notes = whatif.whatif_stack_file("staging", yaml.safe_dump(doc), "here")
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
    out, _, notes = whatif.whatif_stack_file("local", text, "here")
    assert yaml.safe_load(out) == yaml.safe_load(text) and notes == []


def _default_on_release() -> str:
    """A supported release that turns waitForPodsReady on when the Configuration has none."""
    from gpu_queues.kueue.versions import release

    on = [v for v in supported() if (r := release(v)) and r.wait_for_pods_ready_default]
    assert on, "no supported release turns waitForPodsReady on by default"
    return on[0]


def test_a_release_that_waits_for_pods_by_default_gets_the_timeouts_out_of_reach() -> None:
    version = _default_on_release()
    text = (ROOT / "Pulumi.local.yaml").read_text()
    out, _, notes = whatif.whatif_stack_file("local", text, "here", release=version)
    manager = yaml.safe_load(out)["config"]["gpu-queues:kueue"]["manager"]
    assert manager["waitForPodsReady"] == {
        "timeout": whatif.PODS_READY_TIMEOUT,
        "recoveryTimeout": whatif.PODS_READY_TIMEOUT,
    }
    (note,) = notes
    assert f"Kueue {version} turns it on when the stack sets none" in note


def test_a_stack_that_disables_the_default_wait_is_left_without_one() -> None:
    version = _default_on_release()
    doc = yaml.safe_load((ROOT / "Pulumi.local.yaml").read_text())
    kueue = doc["config"].setdefault("gpu-queues:kueue", {})
    kueue.setdefault("manager", {})["featureGates"] = {"DisableWaitForPodsReady": True}
    out, _, notes = whatif.whatif_stack_file("local", yaml.safe_dump(doc), "here", release=version)
    assert "waitForPodsReady" not in yaml.safe_load(out)["config"]["gpu-queues:kueue"]["manager"]
    assert notes == []


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
        whatif.load_replay_side("new", "staging", repo, None, tmp_path)
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
    side = whatif.load_replay_side("new", "staging", repo, None, tmp_path)
    # The shape the sandbox gets is fake_cluster's for the stack: staging's two nodes.
    shape = fake_cluster.shape_of("staging", side.stack_file, side.config)
    assert shape.flavor_nodes == {"h100": 1, "a100": 1}
    rendered = tmp_path / "rendered.yaml"
    rendered.write_text("kind: List\n")
    deployed, notes = rehearse.sandbox_stack_file(
        "staging", side.stack_file, side.config, tmp_path / "out", rendered
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
    base = whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")
    new = whatif.load_replay_side("new", "staging", repo, None, repo / "work")
    gpu = "nvidia.com/gpu"
    quota = lambda side: side.config.teams[0].resource_groups[0].flavors[0].resources[gpu]  # noqa: E731
    assert (quota(base).nominal_quota, quota(new).nominal_quota) == ("4", "3")
    assert base.label == f"staging@{git(repo, 'rev-parse', 'HEAD')[:10]}"
    assert new.label == "staging (work tree)"
    with pytest.raises(whatif.WhatIfError, match="not a commit"):
        whatif.load_replay_side("base", "staging", repo, "no-such-rev", repo / "work")
    with pytest.raises(whatif.WhatIfError, match="unknown stack 'prod'"):
        whatif.load_replay_side("new", "prod", repo, None, repo / "work")


def test_a_missing_workloads_path_is_an_error_before_any_sandbox(tmp_path: Path, capsys) -> None:
    code = sandbox_cli.main(["--stack", "staging", "--workloads", str(tmp_path / "none")])
    assert code == 2 and "no workloads at" in capsys.readouterr().err


def kueue_of(side: whatif.ReplaySide) -> dict:
    return yaml.safe_load(side.stack_file.read_text())["config"]["gpu-queues:kueue"]


@pytest.mark.parametrize(("before", "after"), [(OLDEST, NEWEST), (NEWEST, OLDEST)])
def test_each_side_runs_the_release_its_tree_pins(
    before: str, after: str, repo: Path, write: Write
) -> None:
    # A PR that moves the pin: the base follows the pin it had, not the work tree's (nor the
    # pin of the program running the what-if, which is one of the two either way round).
    write("staging", STAGING)
    pin_moved(repo, before, after)
    base = whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")
    new = whatif.load_replay_side("new", "staging", repo, None, repo / "work")
    assert (base.config.kueue.version, new.config.kueue.version) == (before, after)
    assert (base.kueue_from, new.kueue_from) == ("toolchain/pins.env at HEAD", "toolchain/pins.env")
    # Written into the file the sandbox is shaped from and deploys: the program's default
    # would be its own work tree's pin.
    assert kueue_of(base)["version"] == before and kueue_of(new)["version"] == after
    assert fake_cluster.load_stack(base.stack_file).kueue.version == before
    assert (
        kueue_of(base)["manifest"]
        == yaml.safe_load(STAGING)["config"]["gpu-queues:kueue"]["manifest"]
    )


def test_a_stack_that_sets_its_own_release_keeps_it(repo: Path, write: Write) -> None:
    doc = yaml.safe_load(STAGING)
    doc["config"]["gpu-queues:kueue"]["version"] = NEWEST
    write("staging", yaml.safe_dump(doc))
    pin_moved(repo, OLDEST, OLDEST)
    write("staging", STAGING)  # the work tree follows the pin again
    base = whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")
    new = whatif.load_replay_side("new", "staging", repo, None, repo / "work")
    assert (base.config.kueue.version, base.kueue_from) == (NEWEST, "its own kueue.version")
    assert (new.config.kueue.version, new.kueue_from) == (OLDEST, "toolchain/pins.env")
    assert kueue_of(base)["version"] == NEWEST


def test_a_base_pinned_to_an_unsupported_release_is_refused(repo: Path, write: Write) -> None:
    write("staging", STAGING)
    pin_moved(repo, "v0.17.0", NEWEST)
    with pytest.raises(whatif.WhatIfError) as refused:
        whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")
    said = str(refused.value)
    assert said.startswith("Pulumi.staging.yaml at HEAD: stack 'staging' runs Kueue v0.17.0: ")
    assert "make pin-kueue VERSION=v0.17.0" in said
    assert said.endswith("(the release from toolchain/pins.env at HEAD)")


def test_a_release_that_is_not_built_here_is_refused_naming_how_to_build_it(
    repo: Path, write: Write, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write("staging", STAGING)
    pin_moved(repo, OLDEST, NEWEST)
    base = whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")
    label = base.label
    # A toolchain where only the new release is linked (KUEUE_VERSIONS limited the build).
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / f"kueue-{NEWEST}").write_text("")
    monkeypatch.setattr(kueue_pod, "BIN", bin_dir)
    assert (
        sandbox_cli.unbuilt_release(whatif.load_replay_side("new", "staging", repo, None, tmp_path))
        is None
    )
    said = sandbox_cli.unbuilt_release(base)
    assert said is not None
    assert said.startswith(
        f"{label} runs Kueue {OLDEST} (from toolchain/pins.env at HEAD), which is not built here: "
        f"{bin_dir / f'kueue-{OLDEST}'} is missing"
    )
    assert said.endswith(f"`make toolchain KUEUE_VERSIONS={OLDEST}`")


def test_a_tree_without_pins_is_refused_naming_the_file(
    repo: Path, write: Write, project: Path
) -> None:
    write("staging", STAGING)
    (project / "toolchain" / "pins.env").unlink()
    with pytest.raises(whatif.WhatIfError, match=r"no toolchain/pins\.env in "):
        whatif.load_replay_side("new", "staging", repo, None, repo / "work")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    with pytest.raises(whatif.WhatIfError, match=r"no toolchain/pins\.env at revision 'HEAD'"):
        whatif.load_replay_side("base", "staging", repo, "HEAD", repo / "work")


def test_a_stack_with_provisioning_checks_is_refused_by_name() -> None:
    text = (ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-provisioning.yaml").read_text()
    doc = yaml.safe_load(text)
    doc["config"]["gpu-queues:kueue"] = {"install": True}
    with pytest.raises(whatif.WhatIfError) as refused:
        whatif.whatif_stack_file("local-provisioning", yaml.safe_dump(doc), "here")
    assert str(refused.value) == (
        "here: the stack has provisioning checks (autoscale): Kueue holds each of their "
        "workloads until the cluster autoscaler has made its nodes, and the what-if has no "
        "autoscaler to model (when it answers, whether it fails, which nodes it adds), so a "
        "replay would show those queues admitting at once or never; replay a copy of the "
        "stack without gpu-queues:provisioning (docs/what-if.md)"
    )


def test_the_fast_engine_refuses_a_stack_with_provisioning_checks_too() -> None:
    # The advisor and the fast what-if build the engine's input here, past the stack file.
    from gpu_queues.whatif import engine_input

    config = fake_cluster.load_stack(
        ROOT / "tests" / "e2e" / "stacks" / "Pulumi.local-provisioning.yaml"
    )
    with pytest.raises(engine_input.FastEngineError, match=r"provisioning checks \(autoscale\)"):
        engine_input.engine_input(config, [], "", None)
    assert engine_input.unmodelled(fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")) is None


def test_the_fast_engine_takes_pods_pod_groups_and_the_kinds_it_plays() -> None:
    from gpu_queues.whatif import engine_input
    from gpu_queues.whatif.mix import Entry

    def entry(index: int, kind: str, labels: object) -> Entry:
        meta = {"name": f"w{index}", "namespace": "ns", "labels": labels}
        return Entry(index, f"mix.yaml#{index + 1}", kind, f"w{index}", "ns", "q",
                     manifest={"kind": kind, "metadata": meta})  # fmt: skip

    group = entry(2, "Pod", {"kueue.x-k8s.io/pod-group-name": "g"})
    group = dataclasses.replace(group, members=(group.manifest, group.manifest))
    entries = [entry(0, "Job", {}), entry(1, "Pod", {}), group,
               entry(3, "JobSet", {}), entry(4, "Pod", ["not", "a", "map"]),
               entry(5, "PyTorchJob", {}), entry(6, "RayJob", {}),
               entry(7, "MPIJob", {}), entry(8, "TFJob", {}), entry(9, "XGBoostJob", {}),
               entry(10, "PaddleJob", {}), entry(11, "JAXJob", {}),
               entry(12, "RayCluster", {}), entry(13, "TrainJob", {})]  # fmt: skip
    runtime = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "torch"}}
    entries[13] = dataclasses.replace(entries[13], runtime=runtime)
    config = fake_cluster.load_stack(ROOT / "Pulumi.local.yaml")
    given = engine_input.engine_input(config, entries, "", None)
    sent = given["jobs"]
    # A TrainJob's runtime goes beside it, once.
    assert given["runtimes"] == [runtime]
    assert [(j["index"], j["kind"]) for j in sent] == [
        (0, "Job"), (1, "Pod"), (2, "Pod"), (3, "JobSet"), (4, "Pod"), (5, "PyTorchJob"),
        (6, "RayJob"), (7, "MPIJob"), (8, "TFJob"), (9, "XGBoostJob"), (10, "PaddleJob"),
        (11, "JAXJob"), (12, "RayCluster"), (13, "TrainJob"),
    ]  # fmt: skip
    # A pod group (gpu_queues.whatif.podgroups) goes as one job with its pods as members.
    assert [len(j.get("members", [])) for j in sent[:3]] == [0, 0, 2]
    assert engine_input.not_fast(entries[2]) is None
    assert engine_input.not_fast(entries[3]) is None
    assert engine_input.not_fast(entries[5]) is None
    assert engine_input.not_fast(entries[6]) is None
    assert all(engine_input.not_fast(e) is None for e in entries[7:])
    # The sandbox runs JobSet's controller (sandbox/jobset.py), KubeRay's (sandbox/kuberay.py) and
    # the training-operator (sandbox/training_operator.py), the mpi-operator
    # (sandbox/mpi_operator.py) and the Trainer (sandbox/trainer.py): every kind here but a
    # RayJob is replayed there too; its KubeRay cannot end a RayJob: there RayJobs are
    # unsupported, saying why and which engine replays them.
    from sandbox.replay.engine import on_the_sandbox

    there = [on_the_sandbox(e) for e in entries]
    assert [e.status for e in there] == [
        *["ok"] * 6, "unsupported", *["ok"] * 7,
    ]  # fmt: skip
    assert there[13] == entries[13]
    assert there[13].runtime == runtime  # created before it (owners.install_runtimes)
    assert there[12].manifest == entries[12].manifest
    assert there[3].manifest == entries[3].manifest
    assert all(there[i].manifest == entries[i].manifest for i in (5, 8, 9, 10, 11))
    assert there[6].problem.startswith("the sandbox's KubeRay cannot end a RayJob (it reads")
    assert there[6].problem.endswith("; ENGINE=fast replays it")
    assert there[7].manifest == entries[7].manifest
    assert there[13].manifest == entries[13].manifest
