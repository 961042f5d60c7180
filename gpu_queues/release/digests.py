"""The canonical digests of each supported Kueue release (issue 24, item 1): one sha256 for
the manifest as rendered from the pinned module, and one per object (API group, kind,
namespace, name -> sha256 of the object's canonical JSON, its lists that are sets in one order:
gpu_queues/release/order.py). A manifest whose objects all match the digests of its version is
that release, whatever its YAML formatting or the order of such lists (a copy parsed and dumped
again, or reordered where order means nothing, is still the release); anything else differs,
and `compare` says where.

The digests live in gpu_queues/release/digests/<version>.json, written by `make pin-kueue`
for a new release, or by hand:

    python -m gpu_queues.release.digests --write vX.Y.Z [--offline]   # render and record
    python -m gpu_queues.release.digests --check                      # every supported one

A toolchain test re-renders every supported release and compares, so a digest cannot drift
from its release.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_queues import yamlio
from gpu_queues.kueue.versions import supported
from gpu_queues.release.module import ROOT, RenderError, module_dir, render, write_atomically
from gpu_queues.release.order import unordered
from gpu_queues.values import as_dict

DIGESTS_DIR = Path(__file__).resolve().parent / "digests"


def canonical(obj: Any) -> bytes:
    """One spelling per value: keys sorted, no spaces, UTF-8."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def object_key(obj: Mapping[str, Any]) -> str:
    """group/kind/namespace/name, the object's identity in a cluster (version aside; the core
    group is "core", a cluster-scoped object's namespace "-")."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rpartition("/")[0] or "core"
    meta = as_dict(obj.get("metadata"))
    namespace = meta.get("namespace") or "-"
    return f"{group}/{obj.get('kind')}/{namespace}/{meta.get('name')}"


def object_digests(objects: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for obj in objects:
        key = object_key(obj)
        if key in out:
            raise ValueError(f"the manifest has {key} twice")
        out[key] = hashlib.sha256(canonical(unordered(obj))).hexdigest()
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class ReleaseDigest:
    version: str
    sha256: str
    """Of the manifest file as rendered from the pinned module."""
    objects: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "sha256": self.sha256, "objects": self.objects}


def digest_of(version: str, data: bytes) -> ReleaseDigest:
    objects = [d for d in yamlio.load_all(data, f"the Kueue {version} manifest") if d is not None]
    return ReleaseDigest(version, hashlib.sha256(data).hexdigest(), object_digests(objects))


def path_of(version: str, folder: Path = DIGESTS_DIR) -> Path:
    return folder / f"{version}.json"


def load(version: str, folder: Path = DIGESTS_DIR) -> ReleaseDigest | None:
    """The recorded digests of `version`; None when the release has none recorded."""
    path = path_of(version, folder)
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return ReleaseDigest(data["version"], data["sha256"], dict(data["objects"]))


def write(digest: ReleaseDigest, folder: Path = DIGESTS_DIR) -> Path:
    path = path_of(digest.version, folder)
    write_atomically(path, (json.dumps(digest.to_json(), indent=1) + "\n").encode())
    return path


@dataclass
class Verdict:
    """How a manifest's objects compare with a release's digests."""

    version: str
    known: bool
    """The release has recorded digests (every supported one does)."""
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    @property
    def genuine(self) -> bool:
        return self.known and not (self.missing or self.extra or self.changed)

    def summary(self, source: str, limit: int = 5) -> str:
        if not self.known:
            return f"Kueue manifest {source}: no digests are recorded for {self.version}"
        if self.genuine:
            return f"Kueue manifest {source}: the release {self.version}, object for object"
        parts = []
        for what, keys in (("changed", self.changed), ("added", self.extra),
                           ("missing", self.missing)):  # fmt: skip
            if keys:
                shown = ", ".join(keys[:limit]) + (f" and {len(keys) - limit} more"
                                                   if len(keys) > limit else "")  # fmt: skip
                parts.append(f"{len(keys)} {what} ({shown})")
        return f"Kueue manifest {source} differs from the release {self.version}: " + "; ".join(
            parts
        )


def compare(
    objects: Sequence[Mapping[str, Any]], version: str, folder: Path = DIGESTS_DIR
) -> Verdict:
    return compare_with(objects, version, load(version, folder))


def compare_with(
    objects: Sequence[Mapping[str, Any]], version: str, recorded: ReleaseDigest | None
) -> Verdict:
    """`compare` with the release's digests given (None: it has none recorded)."""
    if recorded is None:
        return Verdict(version, known=False)
    try:
        found = object_digests(objects)
    except ValueError as error:
        return Verdict(version, True, changed=[str(error)])
    return Verdict(
        version,
        True,
        missing=sorted(set(recorded.objects) - set(found)),
        extra=sorted(set(found) - set(recorded.objects)),
        changed=sorted(
            k for k in found.keys() & recorded.objects.keys() if found[k] != recorded.objects[k]
        ),
    )


def rendered_digest(version: str, root: Path = ROOT, offline: bool = False) -> ReleaseDigest:
    """Render `version` from its pinned module with the pinned kubectl, and digest it."""
    kubectl = root / ".toolchain" / "bin" / "kubectl"
    return digest_of(version, render(version, module_dir(version, root, offline), kubectl))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_queues.release.digests", description=__doc__
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="VERSION", help="render a release and record it")
    group.add_argument("--check", action="store_true", help="re-render every supported release")
    parser.add_argument("--offline", action="store_true", help="use the module cache only")
    args = parser.parse_args(argv)
    try:
        if args.write:
            path = write(rendered_digest(args.write, offline=args.offline))
            print(f"{path.relative_to(ROOT)}: recorded Kueue {args.write}")
            return 0
        stale = []
        for version in supported():
            fresh, recorded = rendered_digest(version, offline=args.offline), load(version)
            if recorded != fresh:
                stale.append(version)
        for version in stale:
            print(f"digests of Kueue {version} do not match its render", file=sys.stderr)
        return 1 if stale else 0
    except (RenderError, OSError, ValueError) as error:
        print(f"kueue-digests: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
