"""What OUT gets (gpu_queues.advise.advice) and the command's refusals (gpu_queues.advise.cli): the
proposal written into the stack file through the YAML editor touches only the changed keys,
and a bad GOAL, team or metric is refused by name with exit 2 and no traceback."""

from __future__ import annotations

import difflib
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from gpu_queues.advise import advice
from gpu_queues.advise.cli import main
from gpu_queues.advise.space import Space
from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import parse_config
from sandbox.paths import ROOT
from tests.builders import Flavor, Stack, Team

pytestmark = pytest.mark.unit

PROD = (ROOT / "Pulumi.prod.yaml").read_text()


def prod_space() -> Space:
    raw = parse_config(PROD, "Pulumi.prod.yaml")
    return Space.of(raw, load_config(raw))


def test_prod_has_a_knob_per_team_and_gpu_flavor_and_its_capacity():
    space = prod_space()
    assert [k.label() for k in space.knobs] == [
        f"{t} {f} nvidia.com/gpu" for t in ("research", "vision", "nlp") for f in ("h100", "a100")
    ] + ["cohort reserve h100 nvidia.com/gpu"]  # the company's reserve
    assert dict(space.capacity) == {("h100", "nvidia.com/gpu"): 32, ("a100", "nvidia.com/gpu"): 16}
    assert space.start.settings[0] == (16, 8, 8) and space.start.settings[3] == (8, 4, 4)
    assert space.start.settings[6] == (4, None, None)
    # the cohorts' weights are knobs too: the divisions' 2 and 1, the reserve's unset
    assert space.start.weights[3:] == (2, 1, None)


def test_the_proposal_changes_only_the_changed_keys_lines():
    space = prod_space()
    s = list(space.start.settings)
    s[0] = (22, 8, 8)  # research h100: 6 more
    s[2] = (0, 10, None)  # vision h100: 6 fewer, no lending limit
    candidate = replace(space.start, settings=tuple(s))
    new = advice.proposal_text(PROD, "Pulumi.prod.yaml", space, candidate)
    moved = [
        line
        for line in difflib.ndiff(PROD.splitlines(), new.splitlines())
        if line[:2] in ("- ", "+ ")
    ]
    assert moved == [
        "-           nvidia.com/gpu: {nominalQuota: 16, borrowingLimit: 8, lendingLimit: 8}",
        "+           nvidia.com/gpu: {nominalQuota: 22, borrowingLimit: 8, lendingLimit: 8}",
        "-           nvidia.com/gpu: {nominalQuota: 6, borrowingLimit: 10, lendingLimit: 4}",
        "+           nvidia.com/gpu: {nominalQuota: 0, borrowingLimit: 10}",
    ]
    assert load_config(parse_config(new, "proposal")).teams[0].name == "research"
    assert [c["key"] for c in space.changes(candidate)] == [
        "nominalQuota",
        "nominalQuota",
        "lendingLimit",
    ]


def test_above_the_hardware_is_outside_the_space():
    space = prod_space()
    s = list(space.start.settings)
    s[0] = (17, 8, 8)  # 17 + 6 + 6 + the reserve's 4 > 32 h100
    assert not space.within_hardware(replace(space.start, settings=tuple(s)))
    assert space.within_hardware(space.start)
    for step in space.steps():
        for _, moved in space.moves(space.start, step):
            assert space.within_hardware(moved)
            # A ClusterQueue lends at most its nominal quota; a cohort's lendingLimit bounds
            # what its whole subtree lends, so it may exceed the cohort's own quota.
            assert all(
                lend is None or lend <= n
                for knob, (n, _, lend) in zip(space.knobs, moved.settings, strict=True)
                if knob.kind == "team"
            )


def test_an_unknown_team_or_metric_in_goal_is_refused_by_name(capsys):
    assert main(["--stack", "prod", "--goal", "speech p90 < 2h", "--out", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert "no team 'speech' in the stack (its teams: research, vision, nlp" in err
    assert "Traceback" not in err
    assert main(["--stack", "prod", "--goal", "research p99 < 2h"]) == 2
    assert "unknown metric 'p99'" in capsys.readouterr().err


def test_a_stack_nobody_wrote_is_read_with_its_own_names(tmp_path: Path, capsys):
    (tmp_path / "toolchain").mkdir()
    shutil.copyfile(ROOT / "toolchain" / "pins.env", tmp_path / "toolchain" / "pins.env")
    stack = Stack().flavor(Flavor("zeta9").capacity(cpu=32, memory="64Gi", gpu=4))
    stack.team(Team("quokka").quota("zeta9", cpu=8, memory="8Gi", gpu=4))
    (tmp_path / "Pulumi.odd.yaml").write_text(stack.yaml())
    (tmp_path / "mix.yaml").write_text("")
    args = ["--stack", "odd", "--root", str(tmp_path), "--workloads", str(tmp_path / "mix.yaml")]
    assert main([*args, "--goal", "wombat max < 1h"]) == 2
    assert "no team 'wombat' in the stack (its teams: quokka;" in capsys.readouterr().err
    assert main([*args, "--goal", "quokka p90 < forever"]) == 2
    assert "'forever' is not a duration" in capsys.readouterr().err


def test_a_team_outside_the_stacks_cohort_may_join_it():
    """The stack declares cohort `pool`; `solo` is outside it. One of the moves puts it in,
    and the candidate renders, validates and reads back as that one key."""
    stack = Stack().flavor(Flavor("f").capacity(cpu=64, memory="512Gi", gpu=8)).cohort("pool")
    stack.team(Team("member").cohort("pool").quota("f", cpu=16, memory="64Gi", gpu=4))
    stack.team(Team("solo").quota("f", cpu=16, memory="64Gi", gpu=4))
    raw = stack.raw()
    space = Space.of(raw, load_config(raw))
    joined = [c for what, c in space.moves(space.start, 2) if what == "solo joins cohort pool"]
    assert len(joined) == 1
    config = load_config(space.config_of(joined[0]))
    assert [t.cohort for t in config.teams] == ["pool", "pool"]
    assert space.changes(joined[0]) == [
        {
            "team": "solo",
            "key": "cohort",
            "before": None,
            "after": "pool",
            "path": ["teams", 1, "cohort"],
        }
    ]
