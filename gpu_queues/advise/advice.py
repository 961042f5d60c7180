"""What the advisor writes into OUT: the proposal as the stack file (through the project's YAML
editor, gpu_queues.config.yamledit: only the changed keys' entries rewritten), advice.json
(`{"before": RUN, "after": RUN, "changes": [...], "replays": N}`, RUN as in report.json),
advice.md (the verdict, why in a few sentences, the changes, the stack-file diff, the per-team
before/after table, the checks, and the what-if report of the proposal), and search.json (how
the search went: goal, replays, time, checks).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.advise import goal as goals
from gpu_queues.advise.search import Outcome, describe
from gpu_queues.advise.space import WEIGHT_KEY, Candidate, Space
from gpu_queues.config import yamledit
from gpu_queues.config.secure import shown_diff
from gpu_queues.config.stackfile import StackFileError, parse_config, parse_document
from gpu_queues.escape import code, fence, text
from gpu_queues.whatif.charts import flavor_use, gpus_in_use, pending, team_waits
from gpu_queues.whatif.durations import format_duration
from gpu_queues.whatif.markdown import render
from gpu_queues.whatif.report import Run, WorkloadResult, align


class ProposalError(Exception):
    """The proposal cannot be written into the stack file in place."""


@dataclass
class Checks:
    """What the advisor checked on the proposal, each a line for advice.md."""

    validation: str = ""
    pack: str = ""
    preview: str = ""
    passed: bool = True
    details: dict[str, Any] = field(default_factory=dict)


# The keys a proposal edits: the teams' quotas, cohorts and weights, the cohorts' own quotas
# and weights.
EDITED = (keys.KEY_TEAMS, keys.KEY_COHORTS)


def _edits(
    space: Space, candidate: Candidate, config: Mapping[str, Any] | None
) -> dict[tuple[str | int, ...], Any]:
    out: dict[tuple[str | int, ...], Any] = {}
    for change in space.changes(candidate):
        root = keys.stack_file_key(config, change["path"][0])
        path = ("config", root, *change["path"][1:])
        out[path] = yamledit.REMOVE if change["after"] is None else change["after"]
    return out


def proposal_text(text: str, where: str, space: Space, candidate: Candidate) -> str:
    """The stack file with the candidate's settings, every other byte as it was; checked by
    parsing it back: its teams and cohorts are the candidate's, every other key unchanged."""
    try:
        config = parse_document(text, where).get("config")
        new = yamledit.edit(text, _edits(space, candidate, config))
        before, after = parse_config(text, where), parse_config(new, where)
    except (yamledit.EditError, StackFileError) as exc:
        raise ProposalError(f"{where}: cannot write the proposal in place: {exc}") from None
    wanted = space.config_of(candidate)
    if any(after.get(k) != wanted.get(k) for k in EDITED) or {
        k: v for k, v in after.items() if k not in EDITED
    } != {k: v for k, v in before.items() if k not in EDITED}:
        raise ProposalError(f"{where}: the edited file does not read back as the proposal")
    return new


def stack_diff(old: str, new: str, name: str) -> str:
    """The proposal's diff for advice.md: no line of a secure value (the stack's kubeconfig)
    is copied there (gpu_queues.config.secure.shown_diff)."""
    docs = []
    for side in (old, new):
        with contextlib.suppress(StackFileError):  # its secure keys are found by their lines
            docs.append(parse_document(side, name))
    return shown_diff(old, new, name, docs)


# --- why ------------------------------------------------------------------------------------


def _share(points: Sequence[tuple[float, int]], end: float, test: Any) -> float:
    """Fraction of [0, end] during which the step function's value passes `test`."""
    if end <= 0:
        return 0.0
    total, value, at = 0.0, 0, 0.0
    for t, v in [*points, (end, 0)]:
        t = min(t, end)
        if test(value):
            total += t - at
        at, value = t, v
    return total / end


def _mean(points: Sequence[tuple[float, int]], end: float, cap: int) -> float:
    if end <= 0:
        return 0.0
    total, value, at = 0.0, 0, 0.0
    for t, v in [*points, (end, 0)]:
        t = min(t, end)
        total += min(value, cap) * (t - at)
        at, value = t, v
    return total / end


def _mine(run: Run, team: str, flavor: str | None = None) -> list[WorkloadResult]:
    return [w for w in run.workloads if w.team == team and (flavor is None or w.flavor == flavor)]


def why(space: Space, before: Run, after: Run, candidate: Candidate, goal: goals.Goal) -> list[str]:
    """A few sentences on the imbalance and what the proposal does about it, from the runs."""
    end = before.meta.end
    out = []

    def show(value: float) -> str:
        return "not admitted" if value > end else format_duration(value)

    waiting = sorted(
        (
            (_share(pending(_mine(before, t.team)), end, lambda v: v > 0), t.team)
            for t in before.teams
        ),
        reverse=True,
    )
    for share, team in waiting[:2]:
        if share > 0:
            p90, most = goals.figure(before, team, "p90"), goals.figure(before, team, "max")
            out.append(
                f"Today {team} has a workload waiting for quota {share:.0%} of the replayed "
                f"{format_duration(end)} (p90 wait {show(p90)}, longest {show(most)})."
            )
    idle = []
    for knob, (nominal, _, _) in zip(space.knobs, space.start.settings, strict=True):
        if nominal <= 0 or knob.kind != "team":  # a cohort's quota is used by its subtree's
            continue
        used = _mean(gpus_in_use(_mine(before, knob.team_name, knob.flavor_name)), end, nominal)
        idle.append((nominal - used, knob, nominal, used))
    for spare, knob, nominal, used in sorted(idle, key=lambda x: -x[0])[:2]:
        if spare >= 1:
            out.append(
                f"{knob.team_name} uses on average {used:.1f} of its {nominal} nominal "
                f"{knob.flavor_name} GPUs: {spare:.1f} sit idle unless lent."
            )
    for change in space.changes(candidate):
        out.append(_change_sentence(change))

    for t in after.teams:
        a, b = goals.figure(after, t.team, "p90"), goals.figure(before, t.team, "p90")
        if abs(a - b) >= 1:
            out.append(f"{t.team}'s p90 wait: {show(b)} → {show(a)}.")
    worse = goals.regressed(before, after)
    out.append(
        "No team's p90 wait gets more than 10% worse; what fits and finishes today still does."
        if not worse
        else f"Worse than today (the goal asked for it): {', '.join(worse)}."
    )
    return out


def _limit(value: Any) -> str:
    return "none" if value is None else str(value)


def _change_sentence(c: Mapping[str, Any]) -> str:
    if c["key"] == "cohort":
        return f"{c['team']} joins cohort {c['after']}: it can borrow and lend idle quota."
    who = f"cohort {c['cohort']}" if "cohort" in c else c["team"]
    if c["key"] == WEIGHT_KEY:
        before = 1 if c["before"] is None else c["before"]
        return (
            f"{who}'s fair-sharing weight: {before} → {c['after']} (its share of the idle "
            f"GPUs its siblings do not use {'grows' if c['after'] > before else 'shrinks'})."
        )
    what = f"{who}'s {c['flavor']} {c['resource']} {c['key']}"
    text = f"{what}: {_limit(c['before'])} → {_limit(c['after'])}"
    if c["key"] == "lendingLimit":
        text += " (it lends " + (
            "all of its idle nominal quota to the cohort)"
            if c["after"] is None
            else "none of it)"
            if c["after"] == 0
            else f"at most {c['after']} to the cohort)"
        )
    elif c["key"] == "borrowingLimit":
        text += " (it borrows " + (
            "whatever the cohort has idle)" if c["after"] is None else f"at most {c['after']})"
        )
    return text + "."


# --- the files --------------------------------------------------------------------------------


def team_table(before: Run, after: Run) -> list[str]:
    lines = [
        "| Team | Wait p50 | Wait p90 | Wait max | GPU-hours |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    hours = {t.team: t.gpu_hours for t in before.teams}
    for t in after.teams:
        _, old = team_waits(before, t.team)
        _, new = team_waits(after, t.team)
        cells = [_arrow(a, b) for a, b in zip(old, new, strict=True)]
        cells.append(_arrow(f"{hours.get(t.team, 0.0):.1f}", f"{t.gpu_hours:.1f}"))
        lines.append(f"| {text(t.team)} | " + " | ".join(cells) + " |")
    lines += ["", "| Flavor | GPUs | Utilization |", "| --- | ---: | ---: |"]
    for flavor, gpus in after.meta.flavor_gpus.items():
        shares = []
        for run in (before, after):
            available = gpus * run.meta.end / 3600
            used = flavor_use(run).get(flavor, 0.0)
            shares.append(f"{100 * used / available:.0f}%" if available > 0 else "-")
        lines.append(f"| {text(flavor)} | {gpus} | {_arrow(*shares)} |")
    return lines


def _arrow(a: str, b: str) -> str:
    return b if a == b else f"{a} → **{b}**"


def labelled(run: Run, label: str) -> Run:
    return replace(run, meta=replace(run.meta, source=label))


def write(
    out: Path,
    *,
    stack: str,
    goal: goals.Goal,
    space: Space,
    outcome: Outcome,
    original: str,
    proposal: str,
    checks: Checks,
    notes: Iterable[str] = (),
) -> None:
    """OUT/Pulumi.<stack>.yaml, advice.json, advice.md and search.json."""
    out.mkdir(parents=True, exist_ok=True)
    # Both runs over the same simulated time (report.align), as the what-if compares them.
    before, after = align(
        labelled(outcome.start.run, f"{stack} (today)"),
        labelled(outcome.best.run, f"{stack} (proposal)"),
    )
    changes = space.changes(outcome.best.candidate)
    name = f"Pulumi.{stack}.yaml"
    (out / name).write_text(proposal)
    advice = {
        "before": before.public(),
        "after": after.public(),
        "changes": changes,
        "replays": outcome.replays,
    }
    (out / "advice.json").write_text(json.dumps(advice, indent=2) + "\n")
    reached = goals.met(after, before, goal)
    search = {
        "goal": goal.text(),
        "met": reached,
        "replays": outcome.replays,
        "cached": outcome.cached,
        "refused": len(outcome.refused),
        "seconds": round(outcome.seconds, 1),
        "replaySeconds": round(outcome.replay_seconds, 1),
        "stopped": outcome.stopped,
        "kept": outcome.kept,
        "checks": {"validation": checks.validation, "pack": checks.pack, "preview": checks.preview},
    }
    (out / "search.json").write_text(json.dumps(search, indent=2) + "\n")
    diff = stack_diff(original, proposal, name)
    lines = [f"## Quota advice for {code(stack)}", "", f"Goal: {text(goal.text())}.", ""]
    if not changes:
        lines.append(
            "**No change found that does better than the stack as it is** "
            f"({describe(before, outcome.start.score, goal)})."
        )
    elif goal.clauses and not reached:
        lines.append(
            "**No setting within the hardware the stack declares meets the goal.** The best "
            f"found: {describe(after, outcome.best.score, goal)}."
        )
    else:
        lines.append(
            f"**Proposal:** {describe(after, outcome.best.score, goal)} "
            f"(today: {describe(before, outcome.start.score, goal)})."
        )
    lines += [
        "",
        f"The search ran {outcome.replays} replays on the fast what-if in "
        f"{outcome.seconds:.0f}s ({outcome.replay_seconds:.0f}s of them replaying; "
        f"{outcome.cached} candidates met again, answered from the cache; "
        f"{len(outcome.refused)} refused by the checks before any replay); it stopped because "
        f"{outcome.stopped}.",
        "",
        "**Why**",
        "",
        *[f"- {s}" for s in why(space, before, after, outcome.best.candidate, goal)],
        "",
        "**Checks on the proposal**",
        "",
        f"- config validation: {text(checks.validation)}",
        f"- policy pack: {text(checks.pack)}",
        f"- pulumi preview: {text(checks.preview)}",
        *[f"- {n}" for n in notes],
        "",
        f"**The change** ({code(name)} here is the whole change: copy it over the stack file)",
        "",
        # The stack file's own lines, whatever they hold: a fence no line of it can close.
        *fence(diff.rstrip("\n") if diff else "(no change)", "diff"),
        "",
        "**Before → after, per team**",
        "",
        *team_table(before, after),
        "",
        render(after, before),
    ]
    (out / "advice.md").write_text("\n".join(lines) + "\n")
