"""The Kueue releases this program supports, and what differs between them.

A release is supported when its wrapper module is committed (toolchain/go/kueue/<version>/,
so its source and binary are authenticated by go.sum) and its facts are recorded in
gpu_queues/kueue/releases.json: the feature gates it knows (and which are locked to their
default), its built-in integrations, the integrations its release manifest turns on, and
whether it waits for pods to be ready when the manager Configuration says nothing. The facts
are derived from the module source by `derive` (what Kueue itself would accept or refuse at
start-up), never typed by hand; tests/toolchain/test_kueue_versions.py derives them again
from every supported module and compares.

    python -m gpu_queues.release.facts --derive vX.Y.Z   # print the facts of one release
    python -m gpu_queues.release.facts --write vX.Y.Z    # record them (make pin-kueue does)

The config checks (gpu_queues/config/checks.py) refuse, naming the version, what a release
would refuse to start with; `advice` says what a stack's queue owners see change when the
version moves (make pin-kueue prints it, docs/upgrading.md explains it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from gpu_queues.values import as_dict

ROOT: Final = Path(__file__).resolve().parents[2]
RELEASES_FILE: Final = Path(__file__).resolve().parent / "releases.json"
WRAPPERS: Final = Path("toolchain") / "go" / "kueue"
_VERSION: Final = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


def parse_version(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of vX.Y.Z; ValueError for anything else."""
    match = _VERSION.match(version)
    if not match:
        raise ValueError(f"{version!r} is not a Kueue release (vX.Y.Z)")
    return int(match[1]), int(match[2]), int(match[3])


def minor_of(version: str) -> str:
    major, minor, _ = parse_version(version)
    return f"v{major}.{minor}"


@dataclass(frozen=True)
class Release:
    """What one Kueue release accepts at start-up, and the defaults queue owners feel."""

    version: str
    feature_gates: tuple[str, ...]
    """Every gate the release knows (pkg/features); any other name stops it at start-up."""
    locked_gates: Mapping[str, bool] = field(default_factory=dict)
    """Gates locked to their default (GA or deprecated): setting the other value stops it."""
    frameworks: tuple[str, ...] = ()
    """Built-in integrations (FrameworkName of pkg/controller/jobs/*)."""
    default_frameworks: tuple[str, ...] = ()
    """integrations.frameworks of the release manifest's Configuration."""
    wait_for_pods_ready_default: str | None = None
    """The waitForPodsReady timeout Kueue applies when the Configuration has none; None when
    an absent waitForPodsReady leaves it off."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["locked_gates"] = dict(sorted(self.locked_gates.items()))
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Release:
        return cls(
            version=str(data["version"]),
            feature_gates=tuple(data["feature_gates"]),
            locked_gates=dict(data.get("locked_gates") or {}),
            frameworks=tuple(data.get("frameworks") or ()),
            default_frameworks=tuple(data.get("default_frameworks") or ()),
            wait_for_pods_ready_default=data.get("wait_for_pods_ready_default"),
        )


# --- the recorded facts ---------------------------------------------------------------------


def load_releases(path: Path = RELEASES_FILE) -> dict[str, Release]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {v: Release.from_json(data) for v, data in raw.items()}


_RELEASES: dict[str, Release] | None = None


def releases() -> dict[str, Release]:
    """Every supported release by version (read once)."""
    global _RELEASES
    if _RELEASES is None:
        _RELEASES = load_releases()
    return _RELEASES


def supported() -> list[str]:
    """Supported versions, oldest first."""
    return sorted(releases(), key=parse_version)


def release(version: str) -> Release | None:
    return releases().get(version)


def unsupported_message(version: str) -> str:
    known = supported()
    return (
        f"Kueue {version} is not a release this program supports (supported: "
        f"{', '.join(known)}; the oldest and newest it was tested with are {known[0]} and "
        f"{known[-1]}). Add it with `make pin-kueue VERSION={version}` (docs/upgrading.md)"
    )


def write_release(rel: Release, path: Path = RELEASES_FILE) -> None:
    """Record (or replace) one release's facts; the file stays sorted by version."""
    current = {v: r.to_json() for v, r in load_releases(path).items()} if path.exists() else {}
    current[rel.version] = rel.to_json()
    ordered = {v: current[v] for v in sorted(current, key=parse_version)}
    path.write_text(json.dumps(ordered, indent=2) + "\n", encoding="utf-8")
    global _RELEASES
    _RELEASES = None


# --- deriving the facts from the module source ----------------------------------------------

_GATE_CONST = re.compile(r"^\s*(\w+)\s+featuregate\.Feature\s*=\s*\"(\w+)\"", re.MULTILINE)
_GATE_MAP = re.compile(r"defaultVersionedFeatureGates\s*=\s*map\[[^\]]+\][\w.]+\s*\{")
_GATE_ENTRY = re.compile(r"^\t(\w+):\s*\{(.*?)^\t\},", re.MULTILINE | re.DOTALL)
_SPEC = re.compile(
    r"\{Version:\s*version\.MustParse\(\"([\d.]+)\"\),\s*Default:\s*(true|false),"
    r"\s*PreRelease:\s*featuregate\.(\w+)(?:,\s*LockToDefault:\s*(true|false))?\s*\}"
)
_FRAMEWORK = re.compile(r"\bFrameworkName\s*=\s*\"([^\"]+)\"")
_WFPR_DEFAULT = re.compile(
    r"DefaultWaitForPodsReadyTimeout\s*=\s*(\d+)\s*\*\s*time\.(Hour|Minute|Second)"
)
_UNITS = {"Hour": "h", "Minute": "m", "Second": "s"}


class DeriveError(Exception):
    """The module source does not have the shape the facts are read from."""


def derive(version: str, module: Path) -> Release:
    """The facts of `version` from its module source at `module` (the Go module cache)."""
    features = (module / "pkg/features/kube_features.go").read_text(encoding="utf-8")
    names = {const: name for const, name in _GATE_CONST.findall(features)}
    start = _GATE_MAP.search(features)
    if not names or start is None:
        raise DeriveError(f"Kueue {version}: no feature gates found in pkg/features")
    gates: set[str] = set()
    locked: dict[str, bool] = {}
    for const, body in _GATE_ENTRY.findall(features[start.end() :]):
        specs = _SPEC.findall(body)
        if const not in names or not specs:
            raise DeriveError(f"Kueue {version}: cannot read the specs of feature gate {const}")
        # Specs are listed oldest first; the binary runs at the newest (its emulation
        # version is Kubernetes', far above Kueue's 0.x), so the last one is in force.
        _, default, _, lock = max(specs, key=lambda s: tuple(int(p) for p in s[0].split(".")))
        gates.add(names[const])
        if lock == "true":
            locked[names[const]] = default == "true"
    if gates != set(names.values()):
        missing = sorted(set(names.values()) - gates)
        raise DeriveError(f"Kueue {version}: gates without specs: {', '.join(missing)}")
    frameworks: set[str] = set()
    for go in sorted((module / "pkg/controller/jobs").rglob("*.go")):
        if not go.name.endswith("_test.go"):
            frameworks.update(_FRAMEWORK.findall(go.read_text(encoding="utf-8")))
    base = yaml.safe_load(
        (module / "config/components/manager/controller_manager_config.yaml").read_text()
    )
    defaults = (module / "apis/config/v1beta2/defaults.go").read_text(encoding="utf-8")
    wfpr = _WFPR_DEFAULT.search(defaults)
    return Release(
        version=version,
        feature_gates=tuple(sorted(gates)),
        locked_gates=dict(sorted(locked.items())),
        frameworks=tuple(sorted(frameworks)),
        default_frameworks=tuple((base.get("integrations") or {}).get("frameworks") or ()),
        wait_for_pods_ready_default=f"{wfpr[1]}{_UNITS[wfpr[2]]}" if wfpr else None,
    )


# --- what changes for a stack when the version moves ----------------------------------------


@dataclass(frozen=True)
class Advice:
    """One thing a stack's owners must change (`required`) or should know (`required` False)."""

    key: str
    """The stack config key it is about (under gpu-queues:kueue), e.g. manager.featureGates."""
    text: str
    required: bool = False

    def __str__(self) -> str:
        return f"{'MUST CHANGE' if self.required else 'review'} kueue.{self.key}: {self.text}"


def gate_problems(gates: Mapping[str, Any], rel: Release) -> list[tuple[str, str]]:
    """(gate, why) for every gate `rel` would refuse to start with. One rule for the config
    check and the upgrade advice."""
    known = set(rel.feature_gates)
    problems: list[tuple[str, str]] = []
    for gate, value in gates.items():
        if gate not in known:
            problems.append(
                (
                    gate,
                    f"feature gate {gate!r} does not exist in Kueue {rel.version} (it would "
                    "refuse to start: unrecognized feature gate); remove it",
                )
            )
        elif isinstance(value, bool) and rel.locked_gates.get(gate, value) != value:
            locked = str(rel.locked_gates[gate]).lower()
            problems.append(
                (
                    gate,
                    f"feature gate {gate!r} is locked to {locked} in Kueue {rel.version} (it "
                    "would refuse to start); remove it",
                )
            )
    return problems


def framework_problems(frameworks: Sequence[Any], rel: Release) -> list[tuple[int, str]]:
    known = set(rel.frameworks)
    return [
        (
            i,
            f"{name!r} is not a Kueue {rel.version} integration (Kueue would refuse to start); "
            f"known: {', '.join(sorted(known))}. Other job kinds go under externalFrameworks",
        )
        for i, name in enumerate(frameworks)
        if isinstance(name, str) and name not in known
    ]


# Behaviour changes the facts cannot show, from the release notes and the code diffs
# (docs/upgrading.md has the details): (first version with it, key, text, applies).
def _uses_ray(kueue: Mapping[str, Any], rel: Release) -> bool:
    frameworks = as_dict(as_dict(kueue.get("manager")).get("integrations")).get("frameworks")
    names = frameworks if isinstance(frameworks, list) else rel.default_frameworks
    return any(str(n).startswith("ray.io/") for n in names)


_NOTES: Final = (
    (
        "v0.19.0",
        "manager.integrations",
        "Ray: the autoscaler sidecar (in-tree autoscaling) and the submitter container of a "
        "RayJob in SidecarMode now count against the head pod set's quota, so a Ray job needs "
        "more quota than before and may stay pending where it was admitted",
        _uses_ray,
    ),
    (
        "v0.19.0",
        "manager",
        "MultiKueue: kubeconfigs given by path must live under /etc/multikueue/kubeconfigs "
        "(feature gate MultiKueueKubeConfigPathValidation); this stack configures no "
        "MultiKueue, so only clusters that add it by hand are affected",
        lambda kueue, rel: False,
    ),
)


def advice(kueue: Mapping[str, Any], old: Release, new: Release) -> list[Advice]:
    """What moving a stack (its raw gpu-queues:kueue block) from `old` to `new` changes."""
    manager = as_dict(kueue.get("manager"))
    gates = as_dict(manager.get("featureGates"))
    out: list[Advice] = []
    for gate, why in gate_problems(gates, new):
        out.append(Advice(f"manager.featureGates.{gate}", why, required=True))
    out += _framework_advice(manager, old, new)
    disabled = gates.get("DisableWaitForPodsReady") is True
    if manager.get("waitForPodsReady") is None and not disabled:
        out += _wait_for_pods_ready_advice(old, new)
    lo, hi = sorted((old.version, new.version), key=parse_version)
    for since, key, text, applies in _NOTES:
        if parse_version(lo) < parse_version(since) <= parse_version(hi) and applies(kueue, new):
            prefix = "" if new.version == hi else f"(going back to {new.version} undoes this) "
            out.append(Advice(key, prefix + text))
    return out


def _framework_advice(manager: dict[str, Any], old: Release, new: Release) -> list[Advice]:
    """Integrations the stack lists that `new` refuses; else the release defaults that move."""
    frameworks = as_dict(manager.get("integrations")).get("frameworks")
    if isinstance(frameworks, list):
        return [
            Advice(f"manager.integrations.frameworks[{i}]", why, required=True)
            for i, why in framework_problems(frameworks, new)
        ]
    out: list[Advice] = []
    dropped = [f for f in old.default_frameworks if f not in new.default_frameworks]
    added = [f for f in new.default_frameworks if f not in old.default_frameworks]
    if dropped:
        out.append(
            Advice(
                "manager.integrations.frameworks",
                f"Kueue {new.version}'s release no longer manages {', '.join(dropped)} by "
                "default (this stack keeps the release's list): such jobs run unqueued, "
                "outside every quota. List the integrations the teams use to keep them",
            )
        )
    if added:
        out.append(
            Advice(
                "manager.integrations.frameworks",
                f"Kueue {new.version}'s release also manages {', '.join(added)} by default",
            )
        )
    return out


def _wait_for_pods_ready_advice(old: Release, new: Release) -> list[Advice]:
    """For a stack that leaves waitForPodsReady to Kueue: when the default turns on or off."""
    if new.wait_for_pods_ready_default and not old.wait_for_pods_ready_default:
        return [
            Advice(
                "manager.waitForPodsReady",
                f"Kueue {new.version} turns waitForPodsReady on when the Configuration "
                f"has none: an admitted job whose pods are not all Ready within "
                f"{new.wait_for_pods_ready_default} (and again within "
                f"{new.wait_for_pods_ready_default} after a pod fails) is evicted, "
                "requeued with backoff, and its quota given to others. Set "
                "waitForPodsReady.timeout to what the teams' jobs need (image pulls, "
                "gang start-up), or featureGates.DisableWaitForPodsReady: true to keep "
                f"{old.version}'s behaviour for now (deprecated, to be removed)",
            )
        ]
    if old.wait_for_pods_ready_default and not new.wait_for_pods_ready_default:
        return [
            Advice(
                "manager.waitForPodsReady",
                f"Kueue {new.version} no longer waits for pods to be ready unless "
                f"waitForPodsReady is set ({old.version} did, with "
                f"{old.wait_for_pods_ready_default}); set it to keep that",
            )
        ]
    return []
