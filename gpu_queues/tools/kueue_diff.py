"""What a change does to a stack's Kueue release: version, manifest, objects, queue owners.

    python -m gpu_queues.tools.kueue_diff OLD NEW        each side is STACK or STACK@REV (a git
    revision)
    python -m gpu_queues.tools.kueue_diff staging@origin/main staging     what a PR does to
    staging's Kueue

Prints nothing when the stack's Kueue version, manifest sha256 and controller knobs
(kueue.controller: imageRegistry, priorityClassName, imagePullSecrets, replicas, ...) are the
same on both sides (or it installs Kueue on neither); a change of knobs alone gets a short
section naming them. Otherwise a Markdown section for the PR preview: old ->
new version, the manifest checksums, every release object that is added, removed or changed
(by kind, namespace and name, with the fields that change), and what the move changes for
the stack's queue owners (gpu_queues.kueue.versions.advice). The objects come from the
release manifests rendered from the Kueue modules (gpu_queues.release.module), so both
versions must be supported releases; a side that cannot be rendered is named, not guessed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.config.stackfile import ROOT, StackFileError
from gpu_queues.escape import code, text
from gpu_queues.invoked import prog
from gpu_queues.kueue.versions import advice, parse_version, release
from gpu_queues.release.manifest import ManifestError, parse_documents
from gpu_queues.release.module import RenderError, render_release
from gpu_queues.release.stack_release import own_version, stack_release

Renderer = Callable[[str], bytes]
"""renderer(version) -> the release manifest's bytes (RenderError when it cannot)."""
MAX_PATHS = 4


@dataclass(frozen=True)
class KueueSide:
    """One side's Kueue: what the stack installs, at which version, from which bytes."""

    label: str
    installs: bool
    version: str
    sha256: str | None
    kueue: Mapping[str, Any]
    """The stack's raw gpu-queues:kueue block (for the queue-owner advice)."""

    @property
    def knobs(self) -> dict[str, Any]:
        """The typed knobs of kueue.controller the stack sets (docs/kueue-manifest.md)."""
        controller = self.kueue.get("controller")
        return dict(controller) if isinstance(controller, dict) and self.installs else {}


def side_from_raw(label: str, raw: Mapping[str, Any], pinned: str) -> KueueSide:
    """One side from its stack config; `pinned` is the release it runs when it sets none."""
    kueue = raw.get(keys.KEY_KUEUE)
    kueue = kueue if isinstance(kueue, dict) else {}
    manifest = kueue.get("manifest")
    sha = manifest.get("sha256") if isinstance(manifest, dict) else None
    return KueueSide(
        label=label,
        installs=kueue.get("install", True) is not False,
        version=own_version(raw) or pinned,
        sha256=str(sha) if sha else None,
        kueue=kueue,
    )


def load_side(spec: str, root: Path = ROOT) -> KueueSide:
    """STACK or STACK@REV, at the release it runs there (gpu_queues.release.stack_release)."""
    stack, _, rev = spec.partition("@")
    found = stack_release(stack, root, rev or None)
    return side_from_raw(spec, found.raw, found.version)


# --- the objects --------------------------------------------------------------------------


@dataclass(frozen=True)
class ObjectChange:
    change: str
    """added, removed or changed"""
    kind: str
    namespace: str | None
    name: str
    paths: tuple[str, ...] = ()
    """For a changed object: where it changes (at most MAX_PATHS, then how many more)."""


def _named(items: list[Any]) -> dict[str, Any] | None:
    """A list of named mappings (containers, CRD versions, webhooks) keyed by name."""
    if items and all(isinstance(i, dict) and isinstance(i.get("name"), str) for i in items):
        names = [i["name"] for i in items]
        if len(set(names)) == len(names):
            return {n: i for n, i in zip(names, items, strict=True)}
    return None


def changed_paths(old: Any, new: Any, path: str = "", depth: int = 7) -> list[str]:
    """Where `new` differs from `old`: dotted paths, list items by name where they have one."""
    if old == new:
        return []
    if depth == 0 or type(old) is not type(new) or not isinstance(old, dict | list):
        return [path or "(whole object)"]
    if isinstance(old, list):
        named_old, named_new = _named(old), _named(new)
        if named_old is None or named_new is None:
            return [path]
        old, new = named_old, named_new
        keys_ = list(dict.fromkeys([*old, *new]))
        return [
            p
            for k in keys_
            for p in changed_paths(old.get(k), new.get(k), f"{path}[{k}]", depth - 1)
        ]
    out: list[str] = []
    for key in dict.fromkeys([*old, *new]):
        out += changed_paths(
            old.get(key), new.get(key), f"{path}.{key}" if path else key, depth - 1
        )
    return out


def object_changes(old_data: bytes, new_data: bytes) -> list[ObjectChange]:
    """Release objects added, removed or changed, by API group, kind, namespace and name."""
    old = {d.key(): d for d in parse_documents(old_data, "old manifest")}
    new = {d.key(): d for d in parse_documents(new_data, "new manifest")}
    out = []
    for key in sorted(set(old) | set(new), key=lambda k: (k[1], k[2] or "", k[3])):
        _, kind, namespace, name = key
        if key not in old:
            out.append(ObjectChange("added", kind, namespace, name))
        elif key not in new:
            out.append(ObjectChange("removed", kind, namespace, name))
        elif old[key].obj != new[key].obj:
            paths = changed_paths(old[key].obj, new[key].obj)
            shown = paths[:MAX_PATHS]
            if len(paths) > MAX_PATHS:
                shown.append(f"... {len(paths) - MAX_PATHS} more")
            out.append(ObjectChange("changed", kind, namespace, name, tuple(shown)))
    return out


# --- the section ----------------------------------------------------------------------------


def _short(sha: str | None) -> str:
    return code(sha[:12]) if sha else "none pinned"


def section(old: KueueSide, new: KueueSide, stack: str, renderer: Renderer | None = None) -> str:
    """The PR preview's Kueue section for `stack`; "" when its Kueue does not change."""
    if not old.installs and not new.installs:
        return ""
    same_release = (old.installs, old.version, old.sha256) == (
        new.installs,
        new.version,
        new.sha256,
    )
    if same_release and old.knobs == new.knobs:
        return ""
    if same_release:
        return (
            "\n".join(
                [
                    f"### Kueue {text(new.version)}: controller knobs on {code(stack)}",
                    "",
                    *_knobs(old, new),
                ]
            )
            + "\n"
        )
    renderer = renderer or _render
    lines: list[str] = []
    if old.version != new.version:
        try:
            older = parse_version(new.version) < parse_version(old.version)
        except ValueError:
            older = False
        direction = "downgrade" if older else "upgrade"
        lines.append(
            f"### Kueue {text(old.version)} → {text(new.version)} ({direction}) on {code(stack)}"
        )
    else:
        lines.append(f"### Kueue {text(new.version)}: new manifest on {code(stack)}")
    lines.append("")
    if old.installs != new.installs:
        lines.append(
            f"Installs Kueue: {str(old.installs).lower()} → {str(new.installs).lower()}.\n"
        )
    lines.append(f"Manifest sha256: {_short(old.sha256)} → {_short(new.sha256)}.")
    lines.append("")
    try:
        changes = object_changes(renderer(old.version), renderer(new.version))
    except (RenderError, ManifestError) as error:
        lines.append(f"Release objects: not compared ({text(error)}).")
        changes = None
    if changes is not None and not changes:
        lines.append("The release objects are identical (the pin or its source changed).")
    elif changes:
        lines.append(f"{len(changes)} release object(s) change:")
        lines.append("")
        lines.append("| change | kind | namespace | name | fields |")
        lines.append("|---|---|---|---|---|")
        for c in changes:
            fields = "<br>".join(code(p) for p in c.paths)
            cells = [c.change, text(c.kind), text(c.namespace or ""), text(c.name), fields]
            lines.append("| " + " | ".join(cells) + " |")
    if new.knobs or old.knobs:
        lines += ["", *_knobs(old, new)]
    rel_old, rel_new = release(old.version), release(new.version)
    if old.version != new.version:
        lines.append("")
        if rel_old is None or rel_new is None:
            missing = [v for v, r in ((old.version, rel_old), (new.version, rel_new)) if r is None]
            shown = ", ".join(map(text, missing))
            lines.append(f"Not a supported release: {shown} (docs/upgrading.md).")
        else:
            items = advice(new.kueue, rel_old, rel_new)
            lines.append("**For queue owners** (docs/upgrading.md):")
            lines.append("")
            lines += [f"- {item}" for item in items] or ["- no behaviour change recorded"]
    return "\n".join(lines) + "\n"


def _shown(value: Any) -> str:
    return "unset" if value is None else code(json.dumps(value, sort_keys=True))


def _knobs(old: KueueSide, new: KueueSide) -> list[str]:
    """The controller knobs in effect on the new side, each change from the old one marked."""
    keys_ = sorted(old.knobs.keys() | new.knobs.keys())
    lines = ["Controller knobs in effect (gpu-queues:kueue.controller, laid over the release):", ""]
    for key in keys_:
        before, after = old.knobs.get(key), new.knobs.get(key)
        change = "" if before == after else f" (was {_shown(before)})"
        lines.append(f"- {code(key)}: {_shown(after)}{change}")
    return lines


def _render(version: str) -> bytes:
    return render_release(version).read_bytes()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=prog("python -m gpu_queues.tools.kueue_diff"), description=__doc__
    )
    parser.add_argument("old", help="STACK or STACK@REV")
    parser.add_argument("new", help="STACK or STACK@REV")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        old, new = load_side(args.old, args.root), load_side(args.new, args.root)
    except StackFileError as error:
        print(f"kueue-diff: {error}", file=sys.stderr)
        return 2
    print(section(old, new, args.new.partition("@")[0]), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
