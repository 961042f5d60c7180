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


# The packages whose code the engine's rewrites change in how data is kept, not in an order:
# each ClusterQueue's admitted Workloads, and each ClusterQueue's and Cohort's Usage, shared
# with the scheduler's snapshot and copied on write (cache/scheduler), the sticky workload's key
# compared without being built (cache/queue, v0.18).
KEPT_AS_KUEUE_KEEPS = ("pkg/cache/scheduler", "pkg/cache/queue")


@pytest.mark.parametrize("release", RELEASES)
def test_kueue_s_own_tests_pass_on_the_engine_s_copy_of_what_it_rewrites_for_speed(
    release: str,
) -> None:
    """Kueue's own unit tests of those packages, run on the engine's copy of the release (the
    overlay and the rewrites applied: toolchain/build.sh whatif_kueue) with the release's own
    go.mod, and the overlay's tests of the copies on write (overlay/cache_test.go: snapshots
    taken, then the cache changed, and a snapshot changed, each side seeing only its own
    Workloads and Usage; they fail when the sharing is not copied)."""
    copy = ROOT / ".toolchain" / "whatif" / release / "kueue"
    assert (copy / "go.mod").is_file(), f"no engine copy of Kueue {release}: run make toolchain"
    snapshot = (copy / "pkg/cache/scheduler/snapshot.go").read_text()
    assert "Workloads:                     whatIfShare(cq), whatIfShared: true," in snapshot
    assert "whatIfShareUsage(cq), whatIfUsageShared: true," in snapshot
    assert "whatIfShareCohortUsage(snap.Cohort(cohort.Name), cohort)" in snapshot
    assert (copy / "pkg/cache/scheduler/zz_whatif_test.go").is_file()
    sticky = "whatIfSticky(sw" in (copy / "pkg/cache/queue/cluster_queue.go").read_text()
    assert sticky == release.startswith("v0.18."), release
    packages = [f"./{p}/" for p in KEPT_AS_KUEUE_KEEPS]
    done = run("go", "test", "-count=1", "-v", *packages, cwd=copy,
               env={"GOTOOLCHAIN": "local", "CGO_ENABLED": "0"})  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "--- PASS: TestWhatIfSnapshotsAndTheCacheKeepTheirOwnWorkloads" in done.stdout
    assert "--- PASS: TestWhatIfSnapshotsAndTheCacheKeepTheirOwnUsage" in done.stdout
    for p in KEPT_AS_KUEUE_KEEPS:
        assert f"ok  \tsigs.k8s.io/kueue/{p}\t" in done.stdout, done.stdout[-4000:]


# What Kueue's code may do with a resource group's set of covered resources, which the engine's
# snapshots share with the cache instead of cloning (rewrites.tsv): read it (these methods of
# k8s.io/apimachinery's sets.Set make no change to the set they are called on), or hand it to
# these functions, each read for writes (filterRequestedResources and
# hasOverlapWithPodRequestedResources only look names up; validateFlavorQuotas is the webhook's,
# on the API's list of names).
COVERED_METHODS = {"Has", "HasAll", "HasAny", "Clone", "Len", "Equal", "UnsortedList", "Union"}
COVERED_HANDED_TO = {
    "len", "New", "Union", "filterRequestedResources", "hasOverlapWithPodRequestedResources",
    "validateFlavorQuotas",
}  # fmt: skip
COVERED = re.compile(r"CoveredResources\b")
COVERED_METHOD = re.compile(r"CoveredResources\s*\.\s*(\w+)\(")
COVERED_ARGUMENT = re.compile(r"\b(\w+)\((?:[^()]*,\s*)?[\w.\[\]]*\bCoveredResources\b")
COVERED_WRITE = re.compile(r"CoveredResources\s*(\[[^]]*\])?\s*=[^=]|delete\([^)]*CoveredResources")


@pytest.mark.parametrize("release", RELEASES)
def test_no_code_of_the_release_writes_the_covered_resources_the_engine_s_snapshots_share(
    release: str,
) -> None:
    """Each line of the release's Go code (tests aside) that names a set of covered resources
    reads it, hands it to a function read for writes, or makes a resource group: a method or a
    function not in the lists, or an assignment to the set, fails, naming the file and line
    (to read before adding it to the lists). The sharing itself is the rewrite checked here."""
    copy = ROOT / ".toolchain" / "whatif" / release / "kueue"
    assert (copy / "go.mod").is_file(), f"no engine copy of Kueue {release}: run make toolchain"
    snapshot = (copy / "pkg/cache/scheduler/snapshot.go").read_text()
    assert "cc.ResourceGroups[i] = rg\n" in snapshot
    unread: list[str] = []
    lines = 0
    for path in sorted((copy / "pkg").rglob("*.go")):
        if path.name.endswith("_test.go") or "/util/testing/" in str(path):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("//", 1)[0]
            if not COVERED.search(code):
                continue
            lines += 1
            where = f"{path.relative_to(copy)}:{n}: {line.strip()}"
            methods = set(COVERED_METHOD.findall(code)) - COVERED_METHODS
            handed = set(COVERED_ARGUMENT.findall(code)) - COVERED_HANDED_TO
            written = COVERED_WRITE.search(code) and "CoveredResources:" not in code
            if methods or handed or written:
                unread.append(where)
    assert lines > 10, lines  # the search finds the release's uses
    assert unread == [], "\n".join(unread)
