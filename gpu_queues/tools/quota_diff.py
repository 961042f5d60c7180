"""Markdown table of quota changes between two stack configs (or one stack at two revisions).

    python -m gpu_queues.tools.quota_diff OLD NEW      each side is STACK or STACK@REV (a git
    revision)
    python -m gpu_queues.tools.quota_diff staging@origin/main staging     what a PR changes in
    staging
    python -m gpu_queues.tools.quota_diff staging prod                    how two environments
    differ

First, a team whose stopPolicy changes: that it stops admitting (Hold), that its running jobs
will be evicted (HoldAndDrain) or that it admits again (None), with its admitted workloads read
from the new side's cluster as `make status` reads it (gpu_queues/kueue/stop.py); unknown when
no cluster answers, or with --no-cluster. Then one row per team, flavor and resource (nominal
quota, borrowing and lending limits, before -> after), the cohort tree of a stack that has one
(gpu_queues/tools/cohort_tree.py), then GPUs per flavor (teams' and cohorts' own) against the
flavor's declared capacity, flagged when over.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.render import cluster_queue, cohorts
from gpu_queues.config.stackfile import ROOT, StackFileError, read_config, resolve_commit
from gpu_queues.escape import code, text
from gpu_queues.invoked import prog
from gpu_queues.kueue import stop
from gpu_queues.kueue.capacity import quota_totals
from gpu_queues.kueue.quantity import format_number
from gpu_queues.tools import cohort_tree, status
from gpu_queues.whatif.gpus import is_gpu

ABSENT = "-"
OVER = "⚠️ over capacity"


@dataclass(frozen=True)
class Side:
    """One side of the comparison: a parsed config and the problems load_config found in it."""

    label: str
    config: StackConfig
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuotaRow:
    team: str
    flavor: str
    resource: str
    before: tuple[str | None, str | None, str | None] | None
    after: tuple[str | None, str | None, str | None] | None

    @property
    def change(self) -> str:
        if self.before is None:
            return "added"
        if self.after is None:
            return "removed"
        return "changed" if self.before != self.after else ""


@dataclass(frozen=True)
class CapacityRow:
    flavor: str
    resource: str
    total_before: Fraction | None
    total_after: Fraction | None
    capacity_before: Fraction | None
    capacity_after: Fraction | None

    @property
    def over(self) -> bool:
        return (
            self.total_after is not None
            and self.capacity_after is not None
            and self.total_after > self.capacity_after
        )


def side_from_raw(label: str, raw: Mapping[str, Any]) -> Side:
    """Validate with load_config; relation problems (such as quotas over capacity) are kept as
    notes so the table can still show them, while a malformed value is an error."""
    try:
        return Side(label, load_config(raw))
    except ConfigError as error:
        try:
            config = StackConfig.model_validate(dict(raw))
        except ValidationError:
            raise StackFileError(f"{label}: {error}") from None
        return Side(label, config, tuple(error.messages))


def load_side(spec: str, root: Path = ROOT, missing_ok: bool = False) -> Side:
    """`staging` (work tree) or `staging@origin/main` (git revision)."""
    stack, _, rev = spec.partition("@")
    if not stack:
        raise StackFileError(f"{spec!r}: expected STACK or STACK@REV")
    try:
        raw = read_config(stack, root, rev or None)
    except StackFileError:
        if not missing_ok or (rev and not _revision_exists(root, rev)):
            raise
        raw = {}
    return side_from_raw(spec, raw)


def _revision_exists(root: Path, rev: str) -> bool:
    try:
        resolve_commit(root, rev)
    except StackFileError:
        return False
    return True


def _quotas(config: StackConfig) -> dict[tuple[str, str, str], tuple[str | None, ...]]:
    out: dict[tuple[str, str, str], tuple[str | None, ...]] = {}
    for team in config.teams:
        for group in team.resource_groups:
            for fq in group.flavors:
                for res, q in fq.resources.items():
                    out[(team.name, fq.name, res)] = (
                        q.nominal_quota,
                        q.borrowing_limit,
                        q.lending_limit,
                    )
    return out


def quota_rows(before: StackConfig, after: StackConfig) -> list[QuotaRow]:
    old, new = _quotas(before), _quotas(after)
    order = list(old) + [k for k in new if k not in old]
    rows = []
    for key in order:
        b, a = old.get(key), new.get(key)
        rows.append(
            QuotaRow(
                *key,
                before=(b[0], b[1], b[2]) if b else None,
                after=(a[0], a[1], a[2]) if a else None,
            )
        )
    return rows


def _totals(config: StackConfig) -> dict[tuple[str, str], Fraction]:
    """GPU nominal quotas per flavor: the validation core's capacity sum over the queues and
    the cohorts' own quota."""
    queues = [cluster_queue(team) for team in config.teams]
    totals = quota_totals([*queues, *cohorts(config)])
    return {key: totals.total(key) for key in totals.holders if is_gpu(key[1])}


def _capacities(config: StackConfig) -> dict[tuple[str, str], Fraction]:
    """GPU capacity per flavor: declared totals, or node count x GPUs per node."""
    return {
        (f.name, res): value
        for f in config.flavors
        for res, value in f.effective_capacity().items()
        if is_gpu(res)
    }


def capacity_rows(before: StackConfig, after: StackConfig) -> list[CapacityRow]:
    tb, ta = _totals(before), _totals(after)
    cb, ca = _capacities(before), _capacities(after)
    flavors_in_order = [f.name for f in before.flavors] + [f.name for f in after.flavors]
    keys_seen = {*tb, *ta, *cb, *ca}
    rank = {name: i for i, name in reversed(list(enumerate(flavors_in_order)))}
    ordered_keys = sorted(keys_seen, key=lambda k: (rank.get(k[0], len(rank)), k[0], k[1]))
    return [
        CapacityRow(f, r, tb.get((f, r)), ta.get((f, r)), cb.get((f, r)), ca.get((f, r)))
        for f, r in ordered_keys
    ]


def _cell(before: str | None, after: str | None, *, added: bool, removed: bool) -> str:
    b = ABSENT if before is None else text(before)
    a = ABSENT if after is None else text(after)
    if added:
        return a
    if removed:
        return b
    return a if b == a else f"{b} → **{a}**"


def _num(value: Fraction | None) -> str | None:
    return None if value is None else format_number(value)


def stop_changes(old: Side, new: Side) -> list[stop.StopChange]:
    """The teams whose ClusterQueue's stopPolicy differs between the sides."""
    return stop.stop_changes(
        [(t.name, t.stop_policy) for t in old.config.teams],
        [(t.name, t.cluster_queue, t.stop_policy) for t in new.config.teams],
    )


def stop_section(changes: list[stop.StopChange], admitted: Mapping[str, int] | str) -> list[str]:
    """The stopPolicy changes, first of the report between markers the PR comment keeps on
    top; `admitted` is the cluster's count per ClusterQueue, or why there is none."""
    if not changes:
        return []
    lines = [stop.BEGIN]
    for change in changes:
        if isinstance(admitted, str):
            line = stop.sentence(change, None, admitted)
        else:  # a ClusterQueue the cluster does not have yet admits nothing
            line = stop.sentence(change, admitted.get(change.cluster_queue, 0))
        mark = "" if change.after == stop.NONE else "⚠️ "
        lines += [f"**{mark}{text(line)}**", ""]
    return [*lines[:-1], stop.END, ""]


def render(
    old: Side, new: Side, changes_only: bool = False, admitted: Mapping[str, int] | str = ""
) -> str:
    """The Markdown report: stopPolicy changes, quota table, cohort tree, GPU capacity table,
    config problems if any. `admitted`: admitted workloads per ClusterQueue of the new side's
    cluster, or why they were not read."""
    lines = stop_section(stop_changes(old, new), admitted or "no cluster read")
    lines += [f"### Quota diff: {code(old.label)} → {code(new.label)}", ""]
    rows = quota_rows(old.config, new.config)
    shown = [r for r in rows if r.change or not changes_only]
    if not any(r.change for r in rows):
        lines += ["No quota changes.", ""]
    if shown:
        lines += [
            "| Team | Flavor | Resource | Nominal | Borrowing limit | Lending limit | Change |",
            "| --- | --- | --- | ---: | ---: | ---: | --- |",
        ]
        for r in shown:
            added, removed = r.before is None, r.after is None
            b = r.before or (None, None, None)
            a = r.after or (None, None, None)
            cells = [_cell(b[i], a[i], added=added, removed=removed) for i in range(3)]
            lines.append(
                f"| {text(r.team)} | {text(r.flavor)} | {text(r.resource)} | "
                f"{' | '.join(cells)} | {r.change} |"
            )
        lines.append("")
    lines += cohort_tree.section(old.config, new.config, changes_only)
    caps = capacity_rows(old.config, new.config)
    if caps:
        lines += [
            "| Flavor | Resource | Total nominal | Declared capacity | Status |",
            "| --- | --- | ---: | ---: | --- |",
        ]
        for c in caps:
            total = _cell(_num(c.total_before), _num(c.total_after), added=False, removed=False)
            cap = _cell(_num(c.capacity_before), _num(c.capacity_after), added=False, removed=False)
            if c.total_after is None and c.capacity_after is None:
                status = "removed"
            elif c.over:
                status = OVER
            elif c.capacity_after is None:
                status = "no capacity declared"
            else:
                status = "ok"
            lines.append(f"| {text(c.flavor)} | {text(c.resource)} | {total} | {cap} | {status} |")
        lines.append("")
    for side in (old, new):
        if side.problems:
            lines.append(f"**Config problems in {code(side.label)}** (`pulumi preview` will fail):")
            lines += [f"- {text(p)}" for p in side.problems]
            lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.tools.quota_diff"),
        description="Markdown table of quota changes: OLD and NEW are STACK or STACK@REV.",
    )
    parser.add_argument("old", help="STACK or STACK@REV, e.g. staging@origin/main")
    parser.add_argument("new", help="STACK or STACK@REV, e.g. staging")
    parser.add_argument("--changes-only", action="store_true", help="omit unchanged rows")
    parser.add_argument(
        "--missing-ok",
        action="store_true",
        help="a stack file that does not exist at a revision counts as empty (new stacks)",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="project directory")
    parser.add_argument(
        "--no-cluster",
        action="store_true",
        help="do not read the new side's cluster for a stopPolicy change's admitted workloads",
    )
    parser.add_argument(
        "--fail-over-capacity",
        action="store_true",
        help="exit 3 when NEW puts more GPUs in a flavor than it declares",
    )
    args = parser.parse_args(argv)
    try:
        old = load_side(args.old, args.root, args.missing_ok)
        new = load_side(args.new, args.root, args.missing_ok)
    except StackFileError as error:
        print(f"quota_diff: {error}", file=sys.stderr)
        return 2
    admitted: dict[str, int] | str = "not read: --no-cluster"
    if stop_changes(old, new) and not args.no_cluster:
        admitted = status.admitted_of(args.new.partition("@")[0], args.root)
    print(render(old, new, args.changes_only, admitted))
    if args.fail_over_capacity and any(c.over for c in capacity_rows(old.config, new.config)):
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
