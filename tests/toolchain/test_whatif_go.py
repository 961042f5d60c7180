"""The fast what-if engine's Go side (toolchain/go/whatif): its Go tests against every supported
Kueue release, and its reach into each release's code (the overlay's files and rewrites.tsv,
toolchain/build.sh whatif_check): every rewrite applies where its row says, once, and one that
no longer matches stops the build naming the release, the file and the function."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_queues.pins import read_pins

pytestmark = pytest.mark.toolchain

ROOT = Path(__file__).resolve().parents[2]
TOOLCHAIN = ROOT / "toolchain"
OVERLAY = TOOLCHAIN / "go" / "whatif" / "overlay"
RELEASES = sorted(p.name for p in (TOOLCHAIN / "go" / "kueue").glob("v*") if p.is_dir())
PIN = read_pins()["KUEUE_VERSION"]


def run(
    *argv: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), cwd=cwd, capture_output=True, text=True, timeout=1800, check=False,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.parametrize("release", RELEASES)
def test_the_engine_s_go_tests_pass_against_the_release(release: str) -> None:
    done = run("bash", str(TOOLCHAIN / "whatif.sh"), "test", release)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok  \tgpu-queues.local/toolchain/whatif" in done.stdout, done.stdout


def rewrites() -> list[tuple[str, str, str]]:
    """rewrites.tsv's rows: file, function (as the listing names it), releases pattern."""
    rows = []
    for line in (OVERLAY / "rewrites.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        file, fn, _from, _to, *releases = line.split("\t")
        name = fn.removeprefix("func ")
        if name.startswith("("):
            name = name.split(") ", 1)[1]
        rows.append((file, name.split("(")[0] + "()", releases[0] if releases else ""))
    return rows


def test_every_rewrite_and_overlay_file_fits_every_supported_release() -> None:
    """The listing says, per release, each overlay file's package and each rewrite's fate:
    rewritten where its releases pattern matches (every release when it has none), not
    otherwise; whatif_check exits 0 only when every rewrite matched exactly once."""
    done = run("bash", str(TOOLCHAIN / "build.sh"), "whatif_check")
    assert done.returncode == 0, done.stdout + done.stderr
    listed = [tuple(line.split("\t")) for line in done.stdout.splitlines()]
    expected = []
    for release in RELEASES:
        for f in sorted(OVERLAY.glob("*.go")):
            package = f.read_text().splitlines()[0].split("sigs.k8s.io/kueue/")[1].split(" ")[0]
            expected.append((release, f"overlay/{f.name}", package, "added"))
        for file, name, pattern in rewrites():
            fate = (
                "rewritten"
                if fnmatch.fnmatch(release, pattern or "*")
                else f"not this release ({pattern})"
            )
            expected.append((release, file, name, fate))
    assert listed == expected


def test_a_rewrite_that_no_longer_matches_stops_the_build_naming_release_file_and_function(
    tmp_path: Path,
) -> None:
    """A copy of the toolchain whose schedule() rewrite looks for code the release lacks, as a
    later release that moved it would: the check and the engine's build both fail, naming the
    release, the file and the function, and the check still lists every other rewrite."""
    copy = tmp_path / "checkout" / "toolchain"
    shutil.copytree(TOOLCHAIN, copy)
    tsv = copy / "go" / "whatif" / "overlay" / "rewrites.tsv"
    text = tsv.read_text()
    assert "\ts.queues.Heads(ctx)\t" in text
    tsv.write_text(text.replace("\ts.queues.Heads(ctx)\t", "\ts.queues.HeadsMoved(ctx)\t", 1))
    where = f"Kueue {PIN}, pkg/scheduler/scheduler.go, func (s *Scheduler) schedule(...)"

    env = {"KUEUE_VERSIONS": PIN, "GPU_QUEUES_CACHE": str(tmp_path / "cache")}
    check = run("bash", str(copy / "build.sh"), "whatif_check", env=env)
    assert check.returncode == 1, check.stdout + check.stderr
    assert (
        f'rewrite.awk: {where}: "s.queues.HeadsMoved(ctx)" found 0 times, not once' in check.stderr
    )
    assert f"{PIN}\tpkg/scheduler/scheduler.go\tschedule()\tDOES NOT MATCH" in check.stdout
    applies = [r for r in rewrites() if fnmatch.fnmatch(PIN, r[2] or "*")]
    assert check.stdout.count("\trewritten") == len(applies) - 1, check.stdout

    build = run("bash", str(copy / "build.sh"), "whatif_prepare", env=env)
    assert build.returncode != 0, build.stdout + build.stderr
    assert where in build.stderr, build.stderr
    left = [p.name for p in (tmp_path / "cache" / "toolchain").iterdir() if p.suffix != ".lock"]
    assert left == [], "a half-made copy of the module is left in the cache"


def engine_copy(release: str) -> Path:
    """The engine's copy of the release's Kueue module (toolchain/build.sh whatif_kueue)."""
    copy = ROOT / ".toolchain" / "whatif" / release / "kueue"
    assert (copy / "go.mod").is_file(), f"no engine copy of Kueue {release}: run make toolchain"
    return copy


def rewritten_packages(release: str) -> list[str]:
    """Every package of the release whose code a rewrite changes (rewrites.tsv's rows that apply
    to it), or to which the overlay adds a file."""
    packages = {str(Path(file).parent) for file, _, pattern in rewrites()
                if fnmatch.fnmatch(release, pattern or "*")}  # fmt: skip
    for f in OVERLAY.glob("*.go"):
        first = f.read_text().split("\n", 1)[0]
        if found := re.search(r"sigs\.k8s\.io/kueue/(\S+)", first):
            packages.add(found[1])
    return sorted(packages)


@pytest.mark.parametrize("release", RELEASES)
def test_kueue_s_own_tests_pass_on_the_engine_s_copy_of_what_it_rewrites(release: str) -> None:
    """Kueue's own unit tests of every package the engine rewrites or adds to (the scheduler, its
    preemption and flavor assigner, the cache, the queue manager, the hierarchy, the workload
    controller), run on the engine's copy of the release (the overlay and the rewrites applied:
    toolchain/build.sh whatif_kueue) with the release's own go.mod, and the overlay's tests of
    the copies on write (overlay/cache_test.go: snapshots taken, then the cache changed, and a
    snapshot changed, each side seeing only its own Workloads and Usage; they fail when the
    sharing is not copied). Kueue's tests compare snapshots field by field: a flag the engine
    added where they look fails them (the preemption tests found one on a Cohort's snapshot)."""
    copy = engine_copy(release)
    snapshot = (copy / "pkg/cache/scheduler/snapshot.go").read_text()
    assert ("whatIfShare(cq), ClusterQueue: hierarchy.WhatIfSharingClusterQueue[*CohortSnapshot]()"
            in snapshot)  # fmt: skip
    assert "ResourceNode:                  whatIfShareUsage(cq)," in snapshot
    assert "whatIfShareCohortUsage(snap.Cohort(cohort.Name), cohort)" in snapshot
    assert (copy / "pkg/cache/scheduler/zz_whatif_test.go").is_file()
    sticky = "whatIfSticky(sw" in (copy / "pkg/cache/queue/cluster_queue.go").read_text()
    assert sticky == release.startswith("v0.18."), release
    packages = rewritten_packages(release)
    assert {"pkg/scheduler/preemption", "pkg/cache/hierarchy", "pkg/cache/scheduler"} <= set(
        packages
    ), packages
    done = run("go", "test", "-count=1", "-v", *(f"./{p}/" for p in packages), cwd=copy,
               env={"GOTOOLCHAIN": "local", "CGO_ENABLED": "0"})  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "--- PASS: TestWhatIfSnapshotsAndTheCacheKeepTheirOwnWorkloads" in done.stdout
    assert "--- PASS: TestWhatIfSnapshotsAndTheCacheKeepTheirOwnUsage" in done.stdout
    for p in packages:
        assert f"ok  \tsigs.k8s.io/kueue/{p}\t" in done.stdout, (p, done.stdout[-4000:])


@dataclass(frozen=True)
class Shared:
    """A map or set of Kueue's cache that the engine's snapshots share instead of copying
    (rewrites.tsv), and what Kueue's code may do with it: read it (these methods make no change
    to what they are called on), hand it to these functions (each read for writes), or assign it
    whole where a line has one of `made` (a new one made, never one changed in place)."""

    named: re.Pattern[str]  # a line that names it
    methods: frozenset[str]  # methods called on it (or on one of its sets)
    handed_to: frozenset[str]  # functions it is handed to
    made: tuple[str, ...]  # text of a line that assigns it whole, from a new one
    of_sets: bool = False  # a map of sets: a loop over it may not write the sets it gives

    def unread(self, code: str) -> bool:
        name = self.named.pattern
        methods = set(re.findall(rf"{name}(?:\[[^]]*\])?\s*\.\s*(\w+)\(", code)) - self.methods
        handed = set(re.findall(rf"\b(\w+)\((?:[^()]*,\s*)?[\w.\[\]]*{name}", code))
        written = re.search(rf"{name}\s*(\[[^]]*\])?\s*=[^=]|\b(delete|clear)\([^)]*{name}", code)
        made = any(m in code for m in self.made)
        return bool(methods or handed - self.handed_to or (written and not made))


# A resource group's set of covered resources (sets.Set; these methods of k8s.io/apimachinery's
# sets make no change; filterRequestedResources and hasOverlapWithPodRequestedResources only
# look names up; validateFlavorQuotas is the webhook's, on the API's list of names).
COVERED = Shared(
    re.compile(r"\bCoveredResources\b"),
    frozenset({"Has", "HasAll", "HasAny", "Clone", "Len", "Equal", "UnsortedList", "Union"}),
    frozenset(
        {
            "len",
            "New",
            "Union",
            "filterRequestedResources",
            "hasOverlapWithPodRequestedResources",
            "validateFlavorQuotas",
        }
    ),
    ("CoveredResources:",),
)
# A ClusterQueue's admission checks (a map from check to its set of flavors), in the cache and the
# snapshot; the API's own lists (a spec's, a status's, a strategy's) are other things of that
# name. HasAllRequiredChecks hands it to admissionChecksForAdmission and filterChecks, which
# range over it and only test each set (Intersection, IsSuperset); DeepCopySets copies it;
# Insert is another set's, given a check's flavors as a new list (UnsortedList).
CHECKS = Shared(
    re.compile(r"(?<!Spec)(?<!Status)(?<![Ss]trategy)\.AdmissionChecks\b"),
    frozenset({"Has", "Len", "Equal", "UnsortedList", "Clone", "IsSuperset", "Intersection"}),
    frozenset({"len", "HasAllRequiredChecks", "DeepCopySets", "Insert"}),
    ("= admissioncheck.NewAdmissionChecks(",),
    of_sets=True,
)
RANGED = re.compile(r"for\s+\w+\s*,\s*(\w+)\s*:=\s*range\s+")


def unread_uses(copy: Path, shared: Shared) -> tuple[int, list[str]]:
    """How many lines of the release's Go code (tests aside) name it, and those that may write it:
    a method or a function not in the lists, an assignment not of a new one; and, where a loop
    ranges over it, any line of the function that calls on the loop's value a method not in the
    list or writes into it."""
    lines, unread = 0, []
    for path in sorted((copy / "pkg").rglob("*.go")):
        if path.name.endswith("_test.go") or "/util/testing/" in str(path):
            continue
        text = path.read_text().splitlines()
        for n, line in enumerate(text, 1):
            code = line.split("//", 1)[0]
            if not shared.named.search(code):
                continue
            lines += 1
            suspects = [(n, code)] if shared.unread(code) else []
            ranged = RANGED.search(code) if shared.of_sets else None
            if ranged and shared.named.search(code[ranged.end() :]):
                value = Shared(re.compile(rf"\b{ranged[1]}\b"), shared.methods, shared.handed_to,
                               ())  # fmt: skip
                for m, body in enumerate(text[n:], n + 1):
                    if body.startswith("}"):
                        break
                    if value.named.search(body) and value.unread(body.split("//", 1)[0]):
                        suspects.append((m, body))
            unread += [f"{path.relative_to(copy)}:{m}: {c.strip()}" for m, c in suspects]
    return lines, unread


@pytest.mark.parametrize("release", RELEASES)
def test_no_code_of_the_release_writes_the_covered_resources_the_engine_s_snapshots_share(
    release: str,
) -> None:
    """Each line of the release's Go code (tests aside) that names a set of covered resources
    reads it, hands it to a function read for writes, or makes a resource group: a method or a
    function not in the lists, or an assignment to the set, fails, naming the file and line
    (to read before adding it to the lists). The sharing itself is the rewrite checked here."""
    copy = engine_copy(release)
    snapshot = (copy / "pkg/cache/scheduler/snapshot.go").read_text()
    assert "cc.ResourceGroups[i] = rg\n" in snapshot
    lines, unread = unread_uses(copy, COVERED)
    assert lines > 10, lines  # the search finds the release's uses
    assert unread == [], "\n".join(unread)


@pytest.mark.parametrize("release", RELEASES)
def test_no_code_of_the_release_writes_the_admission_checks_the_engine_s_snapshots_share(
    release: str,
) -> None:
    """The same for each ClusterQueue's map of admission checks: every line that names it (the
    cache's and the snapshot's field, not the API's lists) reads it, hands it to a function read
    for writes, or assigns the cache's a new one; a loop over it only reads each check's set."""
    copy = engine_copy(release)
    snapshot = (copy / "pkg/cache/scheduler/snapshot.go").read_text()
    assert "AdmissionChecks:               cq.AdmissionChecks," in snapshot
    assert "DeepCopySets" not in snapshot
    lines, unread = unread_uses(copy, CHECKS)
    assert lines > 8, lines
    assert unread == [], "\n".join(unread)
