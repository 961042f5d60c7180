"""The quota advisor's command (docs/advisor.md).

    gpuq advise --stack prod [--workloads workloads/prod] [--goal "research p90 < 2h"]
        [--out DIR] [--max-replays N] [--budget SECONDS] [--jobs N]
    make advise STACK=prod [WORKLOADS=workloads/prod] [GOAL="research p90 < 2h"] [OUT=dir]

Replays the mix on the fast what-if (gpu_queues.whatif.fast) for the stack as it is and for each
candidate the search tries (gpu_queues.advise.search), prints progress as it goes (replays done,
the best so far; on a terminal also a line counting replays and time), and writes OUT (default
.sandbox/advise/<stack>): the proposed Pulumi.<stack>.yaml, advice.md, advice.json and
search.json (gpu_queues.advise.advice).

Exit 0 with a proposal (or none, when nothing does better), 3 when a GOAL is not met by any
setting within the hardware (the best found is written all the same), 2 with one line saying
why for a bad GOAL, stack, mix or a missing engine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from gpu_queues.advise import advice, goal, policy
from gpu_queues.advise.preview import preview
from gpu_queues.advise.search import Search
from gpu_queues.advise.space import Space, SpaceError
from gpu_queues.config.model import ConfigError, StackConfig, load_config
from gpu_queues.config.stackfile import ROOT, StackFileError, parse_config, read_text
from gpu_queues.invoked import prog
from gpu_queues.progress import Progress
from gpu_queues.tools.policy_configs import policy_config
from gpu_queues.whatif import fast
from gpu_queues.whatif.documents import Limits, MixTooLarge
from gpu_queues.whatif.engine_input import FastEngineError
from gpu_queues.whatif.limits import mix_size_problem
from gpu_queues.whatif.report import Run
from gpu_queues.whatif.sides import WhatIfError, kueue_release, whatif_raw

DEFAULT_OUT = ROOT / ".sandbox" / "advise"


class AdviseError(Exception):
    """The advisor cannot run; the message says why."""


def _first(exc: ConfigError) -> str:
    return " ".join(str(exc).split())[:400]


def checker(stack: str, pack_config: Path) -> Any:
    """A candidate's config through the validation and the policy pack, or why not."""

    def check(raw: dict[str, Any]) -> StackConfig | str:
        try:
            config = load_config(raw)
        except ConfigError as exc:
            return f"config: {_first(exc)}"
        found = policy.run_pack(config, stack, pack_config)
        if found.mandatory:
            return "policy pack: " + "; ".join(found.mandatory)[:400]
        return config

    return check


def prepare(stack: str, root: Path) -> tuple[str, str, dict[str, Any], StackConfig]:
    where = f"Pulumi.{stack}.yaml"
    try:
        text = read_text(stack, root)
        release, _ = kueue_release(stack, root, None)
        raw, _ = whatif_raw(text, where, release)
    except (StackFileError, WhatIfError) as exc:
        raise AdviseError(str(exc)) from None
    try:
        config = load_config(raw)
    except ConfigError as exc:
        raise AdviseError(f"{where}: the stack config is invalid:\n{exc}") from None
    return text, where, raw, config


def check_proposal(
    stack: str, text: str, where: str, pack_config: Path, out_file: Path, root: Path
) -> advice.Checks:
    checks = advice.Checks()
    try:
        config = load_config(parse_config(text, where))
        checks.validation = "passed (every check the program runs before it registers anything)"
    except (ConfigError, StackFileError) as exc:
        checks.validation, checks.passed = f"FAILED: {_first(exc)}", False  # type: ignore[arg-type]
        config = None
    if config is not None:
        found = policy.run_pack(config, stack, pack_config)
        shown = pack_config.relative_to(root) if pack_config.is_relative_to(root) else pack_config
        if found.mandatory:
            checks.pack, checks.passed = "FAILED: " + "; ".join(found.mandatory), False
        else:
            checks.pack = (
                f"passed: {found.rules} rules on the Kueue objects the proposal renders, with "
                f"{shown}" + (f" ({len(found.advisory)} advisory)" if found.advisory else "")
            )
    ok, line = preview(stack, out_file, policy_config(stack, root), root)
    checks.preview = line
    if ok is False:
        checks.passed = False
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.advise.cli"), description=__doc__
    )
    parser.add_argument("--stack", required=True, help="the stack: Pulumi.<stack>.yaml")
    parser.add_argument("--workloads", type=Path, help="the mix (default workloads/<stack>)")
    parser.add_argument("--goal", help='e.g. "research p90 < 2h" (default: docs/advisor.md)')
    parser.add_argument("--out", type=Path, help=f"where to write (default {DEFAULT_OUT}/<stack>)")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the stack files are")
    parser.add_argument("--max-replays", type=int, default=400, help="replay budget")
    parser.add_argument("--budget", type=float, default=240.0, help="time budget, seconds")
    parser.add_argument("--jobs", type=int, default=2, help="replays side by side (default 2)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    workloads = (args.workloads or root / "workloads" / args.stack).resolve()
    out = (args.out or DEFAULT_OUT / args.stack).resolve()
    began = time.monotonic()
    try:
        if not workloads.exists():
            raise AdviseError(f"no workloads at {workloads}")
        too_large = mix_size_problem(workloads, Limits())
        if too_large:
            raise AdviseError(too_large)
        text, where, raw, config = prepare(args.stack, root)
        wanted = goal.parse_goal(args.goal, [t.name for t in config.teams])
        space = Space.of(raw, config)
        missing = fast.binary_problem(config.kueue.version)
        if missing:
            raise AdviseError(missing)
    except (AdviseError, goal.GoalError, SpaceError) as exc:
        print(f"advise: {exc}", file=sys.stderr)
        return 2
    # The pack config, the engine and the CLI are this project's, wherever the stack file is.
    pack_config = ROOT / policy_config(args.stack, ROOT)

    def judge(candidate: StackConfig) -> Run:
        return fast.replay_mix(
            candidate, workloads, stack=args.stack, label=f"{args.stack} (candidate)"
        )

    # On a terminal, a line under the search's own lines counts replays and time.
    bar = Progress("advise")

    def progress(line: str) -> None:
        bar.say(f"advise: {line}")
        bar.update(f"{search.replays} replays (at most {args.max_replays}, {args.budget:.0f}s)")

    print(f"advise: goal: {wanted.text()}", file=sys.stderr)
    search = Search(
        space,
        judge,
        checker(args.stack, pack_config),
        wanted,
        progress=progress,
        max_replays=args.max_replays,
        budget_seconds=args.budget,
        jobs=args.jobs,
    )
    with bar:
        bar.update("replaying the stack as it is")
        try:
            outcome = search.run()
            proposal = advice.proposal_text(text, where, space, outcome.best.candidate)
        except (FastEngineError, MixTooLarge, advice.ProposalError, ValueError) as exc:
            bar.close()
            print(f"advise: {exc}", file=sys.stderr)
            return 2
        out.mkdir(parents=True, exist_ok=True)
        out_file = out / f"Pulumi.{args.stack}.yaml"
        out_file.write_text(proposal)
        bar.update("checking the proposal (validation, policy pack, pulumi preview)")
        checks = check_proposal(args.stack, proposal, where, pack_config, out_file, ROOT)
    notes = []
    if config.kueue.manager.fair_sharing is None and any(t.cohort for t in config.teams):
        notes.append(
            "fair sharing is off (kueue.manager.fairSharing): Kueue reads no fair-sharing "
            "weight, so weights were not searched"
        )
    advice.write(
        out,
        stack=args.stack,
        goal=wanted,
        space=space,
        outcome=outcome,
        original=text,
        proposal=proposal,
        checks=checks,
        notes=notes,
    )
    met = goal.met(outcome.best.run, outcome.start.run, wanted)
    changes = len(space.changes(outcome.best.candidate))
    print(
        f"advise: {outcome.replays} replays in {time.monotonic() - began:.0f}s "
        f"({outcome.replay_seconds:.0f}s replaying); {changes} keys changed; "
        + ("goal met" if met else "GOAL NOT MET by any setting tried within the hardware")
        + f"; advice in {out / 'advice.md'}"
    )
    if not checks.passed:
        print("advise: the proposal FAILED a check (advice.md, Checks)", file=sys.stderr)
        return 1
    return 0 if met or not wanted.clauses else 3


if __name__ == "__main__":
    sys.exit(main())
