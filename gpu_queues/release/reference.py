"""Where the program finds a release to compare a manifest with (issue 24, item 3): its recorded
digests (gpu_queues/release/digests/<version>.json, committed) and its objects, which come from
the release as rendered from the pinned module into .kueue/<version>/manifests.yaml (`make
kueue-manifest`; never committed). The render is used only when its sha256 is the one recorded
for the release, so what a custom manifest is checked against is the release itself, not
whatever file sits at that path; when it is missing or differs, a custom manifest is refused.

`PinnedReleases` is the program's; tests give a `StandInRelease` (their stand-in manifest
playing one release), never a weaker check.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from gpu_queues import yamlio
from gpu_queues.release import digests
from gpu_queues.release.digests import ReleaseDigest
from gpu_queues.release.module import ROOT, rendered_path, rendered_relpath


class ReleaseUnavailable(Exception):
    """The genuine objects of a release cannot be had; the message says what to run."""


class Releases(Protocol):
    def recorded(self, version: str) -> ReleaseDigest | None:
        """The recorded digests of `version`; None when it has none."""
        ...

    def objects(self, version: str) -> list[dict[str, Any]]:
        """The objects of the release `version` as published; ReleaseUnavailable otherwise."""
        ...


def _objects(data: bytes) -> list[dict[str, Any]]:
    return [
        d
        for d in yamlio.load_all(data, "a published Kueue release manifest")
        if isinstance(d, dict)
    ]


@dataclass(frozen=True)
class PinnedReleases:
    """The committed digests, and the renders of `make kueue-manifest` under `root`."""

    root: Path = ROOT
    folder: Path = digests.DIGESTS_DIR

    def recorded(self, version: str) -> ReleaseDigest | None:
        return digests.load(version, self.folder)

    def objects(self, version: str) -> list[dict[str, Any]]:
        recorded = self.recorded(version)
        if recorded is None:
            raise ReleaseUnavailable(f"no digests are recorded for Kueue {version}")
        path = rendered_path(version, self.root)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ReleaseUnavailable(
                f"the release {version} as rendered from its pinned module "
                f"({rendered_relpath(version)}) cannot be read: {exc.strerror or exc}. Run "
                f"`make kueue-manifest` (python -m gpu_queues.release.module --version {version})"
            ) from None
        actual = hashlib.sha256(data).hexdigest()
        if actual != recorded.sha256:
            raise ReleaseUnavailable(
                f"{rendered_relpath(version)} has sha256 {actual}, not the {recorded.sha256} "
                f"recorded for Kueue {version} (gpu_queues/release/digests/{version}.json), so "
                "it is not the release; render it again with `make kueue-manifest`"
            )
        return _objects(data)


@dataclass(frozen=True)
class StandInRelease:
    """One manifest playing the release `version` (for tests without a toolchain): its
    digests are its own, its objects are the reference."""

    version: str
    data: bytes

    def recorded(self, version: str) -> ReleaseDigest | None:
        return digests.digest_of(version, self.data) if version == self.version else None

    def objects(self, version: str) -> list[dict[str, Any]]:
        if version != self.version:
            raise ReleaseUnavailable(f"the stand-in plays Kueue {self.version}, not {version}")
        return _objects(self.data)
