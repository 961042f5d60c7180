"""The scale benchmark's own logic: generated stacks, rendered objects, the goal verdicts.

The timings themselves are measured by `make bench-scale`, never asserted here.
"""

from __future__ import annotations

import pytest
import yaml

from gpu_queues.config.model import load_config
from sandbox.bench import measure, under_mocks
from sandbox.bench import scale as bench

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("teams", [1, 3, 5])
def test_generated_stacks_are_valid_config_and_render_seven_objects_per_team(teams):
    raw = bench.team_config(teams, "zz9")
    config = load_config(raw)
    assert len(config.teams) == teams
    assert not config.kueue.install
    objects = under_mocks.ours_under_mocks(raw)
    assert len(objects) == bench.objects_per_stack(teams) == 7 * teams + 2
    kinds = sorted(o["kind"] for o in objects)
    assert kinds.count("ClusterQueue") == kinds.count("Namespace") == teams
    assert kinds.count("ResourceFlavor") == kinds.count("Cohort") == 1


def test_rendered_manifest_uses_only_the_prefix_names():
    docs = list(yaml.safe_load_all(bench.rendered_manifest(bench.team_config(2, "k7"))))
    names = {d["metadata"]["name"] for d in docs} - {"gpu-queues-submit", "queue"}
    assert names and all(n.startswith(("k7-", "gpu-queues-k7-")) for n in names)
    namespaces = {d["metadata"].get("namespace") for d in docs} - {None}
    assert namespaces == {"k7-t000", "k7-t001"}
    assert all(v is not None for d in docs for v in d["metadata"].values())


def test_the_trivial_program_registers_as_many_objects():
    assert len(under_mocks.trivial_under_mocks(bench.objects_per_stack(3) - 1)) == 23


@pytest.mark.parametrize("teams", [1, 3])
def test_the_shaped_trivial_program_registers_our_very_objects(teams):
    """The floor is only a floor if its objects are ours: same kinds, names and inputs."""
    ours = sorted(map(repr, under_mocks.ours_under_mocks(bench.team_config(teams, "s7"))))
    assert sorted(map(repr, under_mocks.shaped_under_mocks(teams, "s7"))) == ours
    assert len(ours) == bench.objects_per_stack(teams)


def _size(teams: int, up: float, kubectl: float, noop: float, mocks: tuple[float, float, float]):
    size = bench.Size(teams)
    step = lambda s: bench.Step(s, 0.0, {}, 0.0, 1.0, "")  # noqa: E731
    for label in (bench.PREVIEW, bench.T_PREVIEW, bench.T_UP, bench.T_NOOP_UP):
        size.steps[label] = step(up)
    size.steps[bench.UP] = step(up)
    size.steps[bench.K_APPLY] = step(kubectl)
    size.steps[bench.NOOP_UP] = size.steps[bench.NOOP_PREVIEW] = step(noop)
    size.steps[bench.K_NOOP] = step(1.0)
    size.mocks = dict(zip(bench.MOCKS_KINDS, mocks, strict=True))
    return size


def test_report_states_each_goal_from_the_numbers():
    met = bench.report(
        [
            _size(10, 2.2, 1.0, 1.0, (1.0, 1.0, 1.0)),
            _size(200, 40.0, 9.0, 2.0, (12.0, 11.0, 10.0)),
        ]
    )
    assert "within 60 s: met; 4.4x kubectl, within 6x: met" in met
    assert "within 1.5x: met" in met and "within 1.3x: met" in met
    assert "2.0x kubectl's no-op apply, within 3x: met" in met
    missed = bench.report(
        [
            _size(10, 2.0, 1.0, 1.0, (1.0, 1.0, 1.0)),
            _size(200, 300.0, 9.0, 7.0, (20.0, 16.0, 10.0)),
        ]
    )
    assert "within 60 s: NOT met" in missed and "within 6x: NOT met" in missed
    assert "7.70x, within 1.5x: NOT met" in missed
    assert "7.0x kubectl's no-op apply, within 3x: NOT met" in missed
    assert "2.00x the trivial program per object, within 1.3x: NOT met" in missed
    assert "(objects of our shape: 1.60x, the floor; ours is 1.25x them)" in missed
    assert "| 200 | 14.3 ms | 11.4 ms | 7.1 ms | 1.25 | 1.60 |" in missed


def test_a_step_is_measured_without_a_sandbox(tmp_path, monkeypatch):
    """`bench_scale upstream` runs no cluster: its steps count no cluster CPU, and do not fail."""
    monkeypatch.setattr(measure, "STATE", tmp_path)  # no sandbox state here
    step = bench.measure(["true"], cwd=tmp_path)
    assert step.cluster_cpu == 0.0 and step.seconds >= 0.0
