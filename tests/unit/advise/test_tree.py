"""The advisor on a cohort tree (issue 39): a cohort's own GPU quota and the fair-sharing
weights of teams and cohorts are knobs beside the teams' quotas and limits, and no candidate
leaves the hardware, the config validation or the policy pack. The knobs and moves are
checked on the worked example (docs/examples/organisation/Pulumi.org.yaml); the search on
tiny trees whose answer is worked out by hand, judged by the queue model in model.py."""

from __future__ import annotations

import copy
import difflib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.advise import advice
from gpu_queues.advise.advice import why
from gpu_queues.advise.cli import checker
from gpu_queues.advise.goal import DEFAULT
from gpu_queues.advise.search import Search
from gpu_queues.advise.space import Space
from gpu_queues.config.model import StackConfig, load_config
from gpu_queues.config.render import kueue_objects
from gpu_queues.config.stackfile import parse_config
from sandbox.paths import ROOT
from tests.builders import Flavor, Stack, Team
from tests.unit.advise import model

pytestmark = pytest.mark.unit

ORG_FILE = ROOT / "docs" / "examples" / "organisation" / "Pulumi.org.yaml"
ORG = ORG_FILE.read_text()
PACK = ROOT / "policies" / "config" / "prod.json"
HOUR = 3600.0
FAIR = {"manager": {"fairSharing": {"preemptionStrategies": ["LessThanOrEqualToFinalShare"]}}}


def org(raw: dict[str, Any] | None = None) -> Space:
    raw = raw or parse_config(ORG, "Pulumi.org.yaml")
    return Space.of(raw, load_config(raw))


def labelled(space: Space, step: int, waiting: list[str] | None = None) -> dict[str, Any]:
    return dict(space.moves(space.start, step, waiting))


def test_the_org_tree_has_cohort_quota_and_weight_knobs():
    """Six teams of 8 H100s, acme's 8 and research's 8 of their own: 64, the hardware. Every
    team names a cohort, so each has a weight; of the cohorts, those with a parent (acme is
    the root: it has no siblings to weigh against)."""
    space = org()
    labels = [k.label() for k in space.knobs]
    assert labels[-2:] == ["cohort acme h100 nvidia.com/gpu", "cohort research h100 nvidia.com/gpu"]
    assert len(labels) == 8
    assert space.start.settings[-1] == (8, None, 4)
    assert space.nominal_sums(space.start) == {("h100", "nvidia.com/gpu"): 64}
    assert [w.label() for w in space.weights] == [
        "llm", "vision", "search", "ads", "infra", "data",
        "cohort research", "cohort product", "cohort platform",
    ]  # fmt: skip
    assert [None if w is None else str(w) for w in space.start.weights] == [
        "2", None, None, None, "0", None, "2", "1", "1"
    ]  # fmt: skip
    research = next(k for k in space.knobs if k.label().startswith("cohort research"))
    assert research.serves == {"llm", "vision"}


def test_a_cohorts_quota_counts_against_the_hardware_as_the_validation_counts_it():
    """acme one GPU more is 65 of 64: outside the space, and the config validation refuses
    the same candidate (the tree over the hardware); no move at any step leaves the space,
    and a team's lendingLimit never passes its nominal quota."""
    space = org()
    settings = list(space.start.settings)
    settings[-2] = (9, None, None)
    over = replace(space.start, settings=tuple(settings))
    assert not space.within_hardware(over)
    refused = checker("org", PACK)(space.config_of(over))
    assert isinstance(refused, str) and "65" in refused and "64" in refused
    for step in space.steps():
        for _, moved in space.moves(space.start, step):
            assert space.within_hardware(moved)
            assert all(
                lend is None or lend <= n
                for k, (n, _, lend) in zip(space.knobs, moved.settings, strict=True)
                if k.kind == "team"
            )


def test_for_a_team_that_waits_its_weights_go_up_and_the_others_down():
    """llm waits: its own weight and its division's go up a rung (2 -> 4), the others' only
    down; the root's quota has no limits to move (no parent to lend to), research's has."""
    moves = labelled(org(), 16, ["llm"])
    ups = [m for m in moves if m.startswith("raise") and "fairSharing" in m]
    assert ups == [
        "raise llm fairSharing.weight to 4",
        "raise cohort research fairSharing.weight to 4",
    ]
    downs = [m for m in moves if m.startswith("lower") and "fairSharing" in m]
    assert "lower cohort product fairSharing.weight to 0.5" in downs
    assert "lower search fairSharing.weight to 0.5" in downs
    assert not any(m.startswith("lower llm fair") or "cohort research fair" in m for m in downs)
    assert not any("infra fairSharing" in m for m in downs)  # 0: no rung below
    assert not any("cohort acme" in m and "Limit" in m for m in moves)
    assert "lower cohort research h100 nvidia.com/gpu lendingLimit" in moves
    assert "move 16 h100 nvidia.com/gpu nominal from vision to cohort research" not in moves
    assert not any(m.startswith("give") for m in moves)  # the tree holds all 64


def test_a_weight_and_a_cohort_quota_move_render_pass_the_checks_and_edit_one_line():
    """Each renders as Kueue reads it (the ClusterQueue's and the Cohort's spec), passes the
    validation and the pack, and the proposal changes the stack file's one line."""
    space = org()
    moves = labelled(space, 8, ["llm"])
    check = checker("org", PACK)
    for move, line_before, line_after in (
        (
            "raise llm fairSharing.weight to 4",
            "fairSharing: {weight: 2}",
            "fairSharing: {weight: 4}",
        ),
        (
            "move 8 h100 nvidia.com/gpu nominal from vision to cohort research",
            "nvidia.com/gpu: {nominalQuota: 8, lendingLimit: 4}",
            "nvidia.com/gpu: {nominalQuota: 16, lendingLimit: 4}",
        ),
    ):
        candidate = moves[move]
        config = check(space.config_of(candidate))
        assert isinstance(config, StackConfig), config
        new = advice.proposal_text(ORG, "Pulumi.org.yaml", space, candidate)
        changed = [
            line[:2] + line[2:].strip()
            for line in difflib.ndiff(ORG.splitlines(), new.splitlines())
            if line[:2] in ("- ", "+ ")
        ]
        if "weight" in move:
            assert changed == [f"- {line_before}", f"+ {line_after}"]
            cq = next(o for o in kueue_objects(config) if o["metadata"]["name"] == "llm-cq")
            assert str(cq["spec"]["fairSharing"]["weight"]) == "4"
        else:
            assert f"- {line_before}" in changed and f"+ {line_after}" in changed
            assert len(changed) == 4  # and vision's 8 -> 0
            cohort = next(
                o
                for o in kueue_objects(config)
                if o["kind"] == "Cohort" and o["metadata"]["name"] == "research"
            )
            quota = cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
            assert {q["name"]: str(q["nominalQuota"]) for q in quota}["nvidia.com/gpu"] == "16"


def test_a_weight_back_at_kueues_default_is_no_change():
    """vision writes no weight (Kueue's 1): lowered to 0.5 and raised again, it is the stack
    as it is, not a `weight: 1` written in for nothing."""
    space = org()
    lowered = labelled(space, 8, ["llm"])["lower vision fairSharing.weight to 0.5"]
    assert [c["after"] for c in space.changes(lowered)] == [0.5]
    back = dict(space.moves(lowered, 8, ["vision"]))["raise vision fairSharing.weight to 1"]
    assert back == space.start
    assert space.changes(back) == []


def test_no_weight_is_searched_while_fair_sharing_is_off():
    """Kueue reads no weight without the manager's fair sharing: nothing to search."""
    raw = parse_config(ORG, "Pulumi.org.yaml")
    raw = copy.deepcopy(raw)
    raw["kueue"]["manager"].pop("fairSharing")
    space = org(raw)
    assert space.weights == ()
    assert not any("fairSharing" in m for m in labelled(space, 8))


# --- the search on tiny trees ---------------------------------------------------------------


def tree(gpus: int, pool: int, teams: dict[str, int | None], fair: bool) -> dict[str, Any]:
    """A flavor of `gpus`, a root cohort `pool` holding `pool` of them, and teams: a team
    with None is a member of the pool with no GPUs of its own, one with a number is outside
    it with that many."""
    s = Stack().flavor(Flavor("f").capacity(cpu=64, memory="512Gi", gpu=gpus))
    if fair:
        s.kueue(**FAIR)
    s.set(
        "cohorts",
        [
            {
                "name": "pool",
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {"name": "f", "resources": {"nvidia.com/gpu": {"nominalQuota": pool}}}
                        ],
                    }
                ],
            }
        ],
    )
    for name, own in teams.items():
        if own is None:
            s.team(Team(name).cohort("pool").quota("f", cpu=8, memory="32Gi"))
        else:
            s.team(Team(name).quota("f", cpu=8, memory="32Gi", gpu=own))
    return s.raw()


def searched(raw: dict[str, Any], jobs: list[model.Job]) -> tuple[Space, Any]:
    config = load_config(raw)
    space = Space.of(raw, config)

    def judge(c: StackConfig) -> model.Run:
        return model.replay(c, jobs)

    return space, Search(space, judge, checker("t", PACK), DEFAULT).run()


def test_a_weight_gives_the_team_that_waits_more_of_its_cohorts_gpus(tmp_path: Path):
    """a and c share the pool's 6 GPUs, weights 1:1: 3 each. a has 4 jobs of 1 GPU for 1 h at
    0 s, so its 4th waits 1 h; c has 1. No quota can move (the pool's is all there is) and
    the root has no limits: a's weight a rung up (2:1, 4 and 2) runs all five at once."""
    jobs = [(f"a{i}", "a", 1, 0.0, HOUR) for i in range(4)] + [("c0", "c", 1, 0.0, HOUR)]
    space, outcome = searched(tree(6, 6, {"a": None, "c": None}, fair=True), jobs)
    assert [w.wait_seconds for w in outcome.start.run.workloads] == [0.0, 0.0, 0.0, HOUR, 0.0]
    assert space.changes(outcome.best.candidate) == [
        {
            "team": "a",
            "key": "fairSharing.weight",
            "before": None,
            "after": 2,
            "path": ["teams", 0, "fairSharing", "weight"],
        }
    ]
    assert [w.wait_seconds for w in outcome.best.run.workloads] == [0.0] * 5
    said = why(space, outcome.start.run, outcome.best.run, outcome.best.candidate, DEFAULT)
    assert (
        "a's fair-sharing weight: 1 → 2 (its share of the idle GPUs its siblings do not use "
        "grows)." in said
    )


def test_an_idle_teams_quota_goes_to_the_cohort_its_busy_teams_share():
    """x, outside the pool, holds 4 GPUs and runs nothing; the pool's 4 are split 2 and 2
    between a (4 jobs of 1 GPU) and c (2 jobs): a's 3rd and 4th wait 1 h. Moving x's 4 into
    the pool (fair sharing off: split evenly) gives a and c 4 each: no one waits, and no
    candidate tried holds more than the 8 GPUs."""
    jobs = [(f"a{i}", "a", 1, 0.0, HOUR) for i in range(4)]
    jobs += [(f"c{i}", "c", 1, 0.0, HOUR) for i in range(2)]
    space, outcome = searched(tree(8, 4, {"x": 4, "a": None, "c": None}, fair=False), jobs)
    assert space.weights == ()
    assert [k.label() for k in space.knobs] == [
        "x f nvidia.com/gpu",
        "cohort pool f nvidia.com/gpu",
    ]
    assert [s[0] for s in outcome.best.candidate.settings] == [0, 8]
    assert [w.wait_seconds for w in outcome.best.run.workloads] == [0.0] * 6
    said = why(space, outcome.start.run, outcome.best.run, outcome.best.candidate, DEFAULT)
    assert "cohort pool's f nvidia.com/gpu nominalQuota: 4 → 8." in said
