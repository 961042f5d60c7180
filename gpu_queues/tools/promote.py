"""Promote what was tested in one stack to the next: `make promote FROM=dev TO=staging`.

    python -m gpu_queues.tools.promote FROM TO [--dry-run] [--outputs FILE] [--allow-unset]

Each key under `gpu-queues:kueue` has a rule (RULES, and the table in docs/promotion.md):
  version                       travels, unset included (unset: both follow toolchain/pins.env)
  manifest.path/.url, .sha256   travel together when FROM and TO read their version's manifest
                                from the same place (the same path or url once the version in
                                it is taken out, e.g. .kueue/<version>/manifests.yaml, or both
                                the release URL); otherwise TO keeps its own
  manager.integrations, .waitForPodsReady, .fairSharing, .featureGates, .multiKueue
  (but its origin)              travel when FROM sets them; when FROM does not, TO keeps its
                                own (reported), or loses it with --allow-unset
  everything else               stays: the environment's own (install, controller, readiness
                                timeout, managedJobsNamespaceSelector, manageJobsWithoutQueueName,
                                multiKueue.origin;
                                outside the block: the kubeconfig, flavors, cohort, teams,
                                quotas, shared storage)
A promotion that would leave one of TO's own keys stale (a manifest path or url of its own
that names the old version, a checksum of the old release) refuses and names the key.

All or nothing: FROM must have deployed the Kueue version it promotes (its `kueueVersion`
output); the new text of TO's file is parsed back and must equal TO's old document with the
promoted keys changed and nothing else; the file is then replaced atomically. Only the
entries of the changed keys are rewritten, every other byte stays; the diff is printed.
Secrets (`secure:` values) are never decrypted and never copied between stacks.

The rules are in gpu_queues/tools/promotion_rules.py, the planning and the check of the edit in
promotion_plan.py; here: what FROM deployed, the atomic write, the command line.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from gpu_queues import keys, yamlio
from gpu_queues.config.stackfile import ROOT, stack_file_name
from gpu_queues.files import NotReadable, OutsideProject, inside, read_text
from gpu_queues.invoked import prog
from gpu_queues.tools import pulumi_cli
from gpu_queues.tools.promotion_plan import Plan, PromotionError, plan

POLICY_PACK = ROOT / "policies" / "PulumiPolicy.yaml"

Outputs = Mapping[str, Any]
FetchOutputs = Callable[[str], Outputs]


def policy_pack_version(path: Path = POLICY_PACK) -> str | None:
    """The repo-wide policy pack version, printed for the record (not a per-stack value)."""
    try:
        doc = yamlio.load(read_text(path, str(path)), path.name)
    except (NotReadable, yamlio.YamlRefused, yaml.YAMLError):
        return None
    version = doc.get("version") if isinstance(doc, Mapping) else None
    return str(version) if version is not None else None


def check_deployed(source: str, version: str, outputs: Outputs) -> None:
    """Refuse unless `source` has deployed `version` (its kueueVersion output)."""
    deployed = outputs.get(keys.OUT_KUEUE_VERSION)
    if deployed is None:
        raise PromotionError(
            f"refusing to promote: stack {source!r} has no {keys.OUT_KUEUE_VERSION} output, so "
            f"Kueue {version} was never deployed there; run `pulumi up -s {source}` first"
        )
    if deployed != version:
        raise PromotionError(
            f"refusing to promote Kueue {version}: stack {source!r} has deployed {deployed} "
            f"(its {keys.OUT_KUEUE_VERSION} output); deploy {version} to {source} first "
            f"(`pulumi up -s {source}`), then promote"
        )


def fetch_outputs(stack: str, root: Path = ROOT) -> Outputs:
    """`pulumi stack output --json -s STACK` through toolchain/run (gpu_queues.tools.pulumi_cli)."""
    try:
        return pulumi_cli.stack_outputs(stack, cwd=root, root=root)
    except pulumi_cli.PulumiError as exc:
        said = (exc.stderr or "").strip() or (exc.stdout or "").strip()
        raise PromotionError(
            f"refusing to promote: cannot read the outputs of stack {stack!r} "
            f"(is it deployed?): {said}"
        ) from None
    except pulumi_cli.PulumiOutputError as exc:
        raise PromotionError(str(exc)) from None


def write_atomically(path: Path, old_text: str, new_text: str, root: Path = ROOT) -> None:
    """Replace `path` with `new_text` in one rename, keeping its mode; refuse if it no longer
    holds `old_text` (edited meanwhile). A crash leaves the old file or the new one. A
    symbolic link stays one: the file it points to is replaced, if that is in the project
    (`root`); a link out of it is refused (gpu_queues.files)."""
    try:
        path = inside(path, root)
    except OutsideProject as error:
        raise PromotionError(str(error)) from None
    try:
        current = path.read_bytes()
    except OSError as exc:
        raise PromotionError(f"cannot read {path} again: {exc}") from None
    if current != old_text.encode("utf-8"):
        raise PromotionError(f"{path.name} changed while promoting; nothing was written")
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def promote(
    source: str,
    target: str,
    outputs: FetchOutputs | Outputs,
    root: Path = ROOT,
    dry_run: bool = False,
    allow_unset: bool = False,
) -> Plan:
    """Plan, check that `source` deployed what it promotes, then write the target file.

    `outputs` is the source's stack outputs, or a function fetching them (called only when
    there is something to promote)."""
    result = plan(source, target, root, allow_unset)
    if result.noop:
        return result
    fetched = outputs(source) if callable(outputs) else outputs
    check_deployed(source, result.version, fetched)
    if not dry_run:
        write_atomically(root / stack_file_name(target), result.old_text, result.new_text, root)
    return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.tools.promote"),
        description="Copy what travels from one stack file to the next (dev -> staging -> "
        "prod): the Kueue version, the manifest checksum, the manager's behaviour settings.",
    )
    parser.add_argument("source", metavar="FROM", help="stack that deployed and tested it")
    parser.add_argument("target", metavar="TO", help="stack to promote to")
    parser.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    parser.add_argument(
        "--outputs",
        type=Path,
        help="FROM's stack outputs as JSON (default: `pulumi stack output --json -s FROM`)",
    )
    parser.add_argument(
        "--allow-unset",
        action="store_true",
        help="remove from TO the manager settings FROM does not set (default: TO keeps them)",
    )
    parser.add_argument("--root", type=Path, default=ROOT, help="project directory")
    args = parser.parse_args(argv)

    outputs: FetchOutputs | Outputs
    if args.outputs is not None:
        shown = f"outputs file {args.outputs}"
        try:
            outputs = yamlio.load_json(read_text(args.outputs, shown), shown)
        except (NotReadable, yamlio.YamlRefused) as exc:
            print(f"promote: {exc}", file=sys.stderr)
            return 2
        except ValueError as exc:
            print(f"promote: cannot read {shown}: {exc}", file=sys.stderr)
            return 2
        if not isinstance(outputs, Mapping):
            kind = type(outputs).__name__.replace("NoneType", "null")
            print(
                f"promote: {shown} holds a JSON {kind}, not the mapping of output names to "
                "values that `pulumi stack output --json` prints",
                file=sys.stderr,
            )
            return 2
    else:

        def outputs(stack: str) -> Outputs:
            return fetch_outputs(stack, args.root)

    try:
        result = promote(
            args.source, args.target, outputs, args.root, args.dry_run, args.allow_unset
        )
    except PromotionError as error:
        print(f"promote: {error}", file=sys.stderr)
        return 1
    for line in result.kept:
        print(f"kept: {line}")
    if result.noop:
        print(f"{args.target} already has what {args.source} promotes: nothing to do")
        return 0
    print(result.diff(), end="")
    for line in result.changes:
        print(f"  {line}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    pack = policy_pack_version()
    verb = "would promote" if args.dry_run else "promoted"
    print(
        f"{verb} {args.source} -> {args.target} (Kueue {result.version}; policy pack "
        f"{pack or 'unknown'} is repo-wide). Next: open a PR with {stack_file_name(args.target)}"
        f"; its preview shows `pulumi preview -s {args.target}`."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
