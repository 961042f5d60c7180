"""What each make target builds (issue 22, item 9), read from its dry run (`make -n`): the
demo, the sandbox and a rehearsal on the pin build Kueue at the pinned release only, never
every supported one (each a cold build of 10-30 minutes); `make test` builds every one; `make
lint` builds actionlint only where there is none at its pin. And
toolchain/build.sh itself, with a stand-in `go`, builds exactly the releases KUEUE_VERSIONS
names, with the pin."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from gpu_queues.kueue.versions import supported
from gpu_queues.pins import kueue_version, read_pins

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
EVERY = "every supported release"  # build.sh with KUEUE_VERSIONS empty or unset
BUILD = re.compile(
    r"^(?P<env>(?:\w+=(?:\"[^\"]*\"|\S*) )*)bash toolchain/build\.sh(?P<tools>[^\n;&|]*)$"
)


def dry_run(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("KUEUE_VERSIONS", "MAKEFLAGS")}
    return subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def kueue_builds(*args: str) -> list[str]:
    """The Kueue releases each toolchain/build.sh line of the dry run builds (joined by spaces,
    or EVERY), for the lines that build Kueue at all (no tool named, or `kueue`)."""
    builds = []
    for line in dry_run(*args).splitlines():
        found = BUILD.match(line.strip())
        if not found:
            assert "toolchain/build.sh" not in line, f"a build line this test cannot read: {line}"
            continue
        tools = found["tools"].split()
        if tools and "kueue" not in tools:
            continue
        env = dict(re.findall(r"(\w+)=(\"[^\"]*\"|\S*) ", found["env"]))
        versions = env.get("KUEUE_VERSIONS", "").strip('"').split()
        builds.append(" ".join(versions) if versions else EVERY)
    return builds


@pytest.mark.parametrize(
    "target",
    [
        ["demo"],
        ["sandbox-up"],
        ["sandbox-up", "STACK=staging"],
        ["rehearse", "STACK=staging"],
        ["rehearse", "STACK=prod"],
        ["bench"],
        ["bench-scale"],
        ["what-if", "STACK=staging"],
        ["test-multikueue"],
        ["toolchain"],
    ],
    ids=" ".join,
)
def test_the_demo_and_the_sandbox_build_only_the_pinned_kueue(target: list[str]) -> None:
    assert kueue_builds(*target) == [kueue_version()]


def test_make_toolchain_adds_the_releases_named() -> None:
    assert kueue_builds("toolchain", "KUEUE_VERSIONS=v0.19.2") == ["v0.19.2"]  # + the pin


@pytest.mark.parametrize(
    "target", ["test", "test-toolchain", "test-e2e", "test-sandbox", "test-rehearse"]
)
def test_the_suites_that_run_other_releases_build_every_supported_one(target: str) -> None:
    assert kueue_builds(target) == [" ".join(sorted(supported()))]


def test_the_suites_on_the_host_build_nothing() -> None:
    for target in ("test-unit", "test-policy", "test-deep"):
        assert "toolchain/build.sh" not in dry_run(target), target


def lint_workflows_dry_run(tmp_path: Path, built: str | None) -> str:
    """`make -n lint-workflows` in a copy of the Makefile and what it reads, where
    .toolchain/bin/actionlint says `built` is its version (None: there is none)."""
    project = tmp_path / "project"
    (project / "toolchain").mkdir(parents=True)
    for name in ("Makefile", "requirements.txt", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, project / name)
    shutil.copy(ROOT / "toolchain" / "pins.env", project / "toolchain" / "pins.env")
    if built is not None:
        actionlint = project / ".toolchain" / "bin" / "actionlint"
        actionlint.parent.mkdir(parents=True)
        actionlint.write_text(f"#!/bin/sh\necho {built}\necho installed by building from source\n")
        actionlint.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MAKEFLAGS"}
    return subprocess.run(
        ["make", "-n", "--no-print-directory", "lint-workflows"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize(
    ("built", "builds"),
    [(None, True), (read_pins()["ACTIONLINT_VERSION"], False), ("v0.0.1", True)],
    ids=["none", "at the pin", "another version"],
)
def test_the_workflow_lint_builds_actionlint_only_when_none_is_there_at_the_pin(
    tmp_path: Path, built: str | None, builds: bool
) -> None:
    lines = lint_workflows_dry_run(tmp_path, built).splitlines()
    assert ("bash toolchain/build.sh actionlint" in lines) == builds, lines
    assert lines[-1].startswith(".toolchain/bin/actionlint -shellcheck "), lines


# --- toolchain/build.sh, with a `go` that only records what it is asked to build ----------

FAKE_GO = """#!/usr/bin/env bash
case "$1" in
  env) echo go0.0-fake ;;
  mod) ;;
  list) d=$FAKE_GO_LOG.module  # a module folder for the what-if engine's copy
        mkdir -p "$d/pkg/scheduler/flavorassigner" "$d/pkg/cache/hierarchy" "$d/pkg/cache/queue" \
          "$d/pkg/controller/core" "$d/pkg/controller/jobs/pod" "$d/pkg/scheduler/preemption" \
          "$d/pkg/controller/jobs/statefulset" "$d/pkg/controller/jobs/deployment" \
          "$d/pkg/controller/jobs/leaderworkerset"
        # the lines the engine's rewrites (toolchain/go/whatif/overlay/rewrites.tsv) look for
        # (FAKE_GO_MOVED: a release that moved the first of them)
        s="$d/pkg/scheduler" c="$d/pkg/cache/hierarchy/cohort.go"
        printf 'func (s *Scheduler) schedule(ctx context.Context) {\n\theads := %s\n}\n' \
          "${FAKE_GO_MOVED:-s.queues.Heads(ctx)}" > "$s/scheduler.go"
        printf 'func runTournament(c *Cohort) *entry {\n\tbest := candidates[0]\n}\n' \
          > "$s/fair_sharing_iterator.go"
        printf 'func (c *Cohort[CQ, C]) %s {\n\treturn c.%s.UnsortedList()\n}\n' \
          'ChildCQs() []CQ' childCqs 'ChildCohorts() []C' childCohorts > "$c"
        printf '%s\n\tparent       C\n}\n' \
          'type Cohort[CQ clusterQueueNode[C], C nodeBase[kueue.CohortReference]] struct {' >> "$c"
        printf 'type ClusterQueue[C nodeBase[kueue.CohortReference]] struct {\n\tcohort C\n}\n' \
          > "$d/pkg/cache/hierarchy/clusterqueue.go"
        printf '%s\n\tfor rName, val := range requests {\n}\n' \
          'func (a *FlavorAssigner) findFlavorForPodSets(' > "$s/flavorassigner/flavorassigner.go"
        printf 'func (r *WorkloadReconciler) Update(e E) bool {\n\tb := %s\n}\n' \
          'time.Until(e.ObjectNew.Status.RequeueState.RequeueAt.Time)' \
          > "$d/pkg/controller/core/workload_controller.go"
        printf '%s\n\t%s func(i int) {\n\t})\n}\n' 'func (p *Preemptor) IssuePreemptions(' \
          'workqueue.ParallelizeUntil(ctx, parallelPreemptions, len(targets),' \
          > "$s/preemption/preemption.go"
        printf 'func (m *Manager) heads() []workload.Info {\n\t\twl := cq.Pop()\n\t\t%s\n}\n' \
          'reportCQPendingWorkloads(m, cq)' > "$d/pkg/cache/queue/manager.go"
        printf '%s\n\treturn func(a, b *workload.Info) int {\n\t\t%s\n\t\t%s\n\t}\n}\n' \
          'func baseCompareFunc(sw *stickyWorkload) func(a, b *workload.Info) int {' \
          'aSticky := sw.matches(workload.Key(a.Obj))' \
          'bSticky := sw.matches(workload.Key(b.Obj))' \
          > "$d/pkg/cache/queue/cluster_queue.go"
        printf '%s\n\t%s\n\t%s\n\t\t%s\n\t}\n}\n' \
          'func queueInadmissibleWorkloads(ctx context.Context, c *ClusterQueue, client C) int {' \
          'c.rwm.Lock()' 'for key, wInfo := range c.inadmissibleWorkloads {' \
          'err := client.Get(ctx, types.NamespacedName{Name: wInfo.Obj.Namespace}, &ns)' \
          > "$d/pkg/cache/queue/inadmissible_workloads.go"
        k="$d/pkg/cache/scheduler"; mkdir -p "$k"
        printf '%s\n\t%s\n}\n%s\n\t%s\n}\n%s\n\t%s\n}\n' \
          'func (c *clusterQueue) addOrUpdateWorkload(w *kueue.Workload) {' 'c.Workloads[k] = wi' \
          'func (c *clusterQueue) deleteWorkload(wlKey workload.Reference) {' \
          'delete(c.Workloads, wlKey)' \
          'func (c *clusterQueue) flavorsWithProvReqAdmissionCheck() sets.Set[F] {' \
          'flvs := sets.New[kueue.ResourceFlavorReference]()' > "$k/clusterqueue.go"
        printf '%s\n\t%s\n}\n%s\n\t%s\n}\n' \
          'func addUsage(node hierarchicalResourceNode) {' 'r := node.getResourceNode()' \
          'func removeUsage(node hierarchicalResourceNode) {' 'r := node.getResourceNode()' \
          > "$k/resource_node.go"
        printf 'import (\n\tutilmaps "sigs.k8s.io/kueue/pkg/util/maps"\n)\n' > "$k/snapshot.go"
        printf '%s\n\t%s\n}\n%s\n\t%s\n\t\t%s\n\t%s\n}\n%s\n\t%s\n}\n%s\n\t%s\n}\n' \
          'func (c *Cache) Snapshot(ctx context.Context) (*Snapshot, error) {' \
          'snap.Cohort(cohort.Name).ResourceNode = cohort.resourceNode.Clone()' \
          'func (c *Cache) snapshotClusterQueue(cq *clusterQueue) *ClusterQueueSnapshot {' \
          'cc := &ClusterQueueSnapshot{Workloads: maps.Clone(cq.Workloads),' \
          'ResourceNode: cq.resourceNode.Clone(), A: utilmaps.DeepCopySets(cq.AdmissionChecks)}' \
          'cc.ResourceGroups[i] = rg.Clone()' \
          'func (s *Snapshot) AddWorkload(wl *workload.Info) {' \
          'cq.Workloads[workload.Key(wl.Obj)] = wl' \
          'func (s *Snapshot) RemoveWorkload(wl *workload.Info) {' \
          'delete(cq.Workloads, workload.Key(wl.Obj))' >> "$k/snapshot.go"
        echo "$d" ;;
  build)
    out=""; pkg=""; modfile=""
    while [ $# -gt 0 ]; do
      case "$1" in
        -o) out=$2; shift ;; -ldflags) ldflags=$2; shift ;; -modfile=*) modfile=${1#-modfile=} ;;
        *) pkg=$1 ;;
      esac
      shift
    done
    # the engine, built on its module for a release (-modfile: the release's go.mod beside the
    # engine's copy of its Kueue), each build after the release that go.mod names
    if [ -n "$modfile" ]; then
      m=$(dirname "$modfile")
      grep -h 'sigs.k8s.io/kueue v' "$modfile" >> "$FAKE_GO_LOG.engine"
      (cd "$m/kueue/pkg" && cat scheduler/scheduler.go scheduler/fair_sharing_iterator.go \
        cache/hierarchy/cohort.go scheduler/flavorassigner/flavorassigner.go \
        controller/core/workload_controller.go scheduler/preemption/preemption.go \
        cache/queue/manager.go cache/queue/cluster_queue.go cache/queue/inadmissible_workloads.go \
        cache/scheduler/clusterqueue.go \
        cache/scheduler/snapshot.go cache/hierarchy/clusterqueue.go \
        cache/scheduler/resource_node.go \
        >> "$FAKE_GO_LOG.engine")
      (cd "$m/kueue" && find pkg -name zz_whatif.go | sort >> "$FAKE_GO_LOG.overlay")
    fi
    echo "$pkg $ldflags" >> "$FAKE_GO_LOG"; printf '#!/bin/sh\\n' > "$out"; chmod +x "$out" ;;
  *) echo "fake go: $*" >&2; exit 1 ;;
esac
"""


def build_kueue(
    tmp_path: Path,
    kueue_versions: str | None,
    before: Callable[[Path], None] | None = None,
    **extra: str,
) -> subprocess.CompletedProcess[str]:
    """`build.sh kueue` in a copy of the project's toolchain folder, with an empty binary
    cache and the fake go (`before`: a change to the copy; `extra`: more of go's
    environment)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "toolchain", project / "toolchain")
    if before is not None:
        before(project)
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "go").write_text(FAKE_GO)
    (fake / "go").chmod(0o755)
    log = tmp_path / "go.log"
    env = {k: v for k, v in os.environ.items() if k != "KUEUE_VERSIONS"}
    env.update(
        PATH=f"{fake}:{env['PATH']}",
        FAKE_GO_LOG=str(log),
        GPU_QUEUES_CACHE=str(tmp_path / "cache"),
    )
    env.update(extra)
    if kueue_versions is not None:
        env["KUEUE_VERSIONS"] = kueue_versions
    return subprocess.run(
        ["bash", "toolchain/build.sh", "kueue"],
        cwd=project,
        env=env,
        check=False,
        capture_output=True,
        text=True,
    )


def built_releases(tmp_path: Path, kueue_versions: str | None) -> tuple[list[str], list[str]]:
    """(the Kueue releases build.sh compiled, the kueue binaries it linked)."""
    done = build_kueue(tmp_path, kueue_versions)
    assert done.returncode == 0, done.stderr
    log, project = tmp_path / "go.log", tmp_path / "project"
    compiled = re.findall(r"pkg/version\.GitVersion=(v[\w.]+)", log.read_text())
    linked = sorted(p.name for p in (project / ".toolchain" / "bin").glob("kueue-*"))
    return sorted(compiled), linked


def test_build_sh_builds_only_the_pin_when_kueue_versions_names_it(tmp_path: Path) -> None:
    pin = kueue_version()
    assert built_releases(tmp_path, pin) == ([pin], [f"kueue-{pin}"])


def test_build_sh_adds_the_pin_to_the_releases_named(tmp_path: Path) -> None:
    pin = kueue_version()
    other = next(v for v in supported() if v != pin)
    assert built_releases(tmp_path, other) == (
        sorted([pin, other]),
        sorted([f"kueue-{pin}", f"kueue-{other}"]),
    )


def test_build_sh_builds_every_supported_release_when_none_is_named(tmp_path: Path) -> None:
    every = sorted(supported())
    assert built_releases(tmp_path, None) == (every, [f"kueue-{v}" for v in every])


def test_the_engine_is_built_with_ties_in_a_fixed_order(tmp_path: Path) -> None:
    """The what-if engine's copy of Kueue has the map-order ties rewritten (rewrites.tsv;
    tests/toolchain/test_whatif_engine.py shows what they decide), sets no pending gauges
    per ClusterQueue per cycle, shares each ClusterQueue's admitted Workloads with the
    scheduler's snapshot, copied on write, where Kueue clones them every cycle, and reads a
    Namespace once per requeue of a ClusterQueue's inadmissible workloads."""
    assert build_kueue(tmp_path, kueue_version()).returncode == 0
    engine = (tmp_path / "go.log.engine").read_text()
    assert "heads := whatIfByUID(s.queues.Heads(ctx))" in engine
    assert "whatIfEntriesByUID(candidates); best := candidates[0]" in engine
    for kind, field in (("CQ, kueue.ClusterQueueReference", "childCqs"),
                        ("C, kueue.CohortReference", "childCohorts")):  # fmt: skip
        assert f"return whatIfSorted[{kind}](c.{field}.UnsortedList())" in engine
    assert "UnsortedList()\n" not in engine.replace("UnsortedList())", "")
    assert "e.ObjectNew.Status.RequeueState.RequeueAt.Time.Sub(r.clock.Now())" in engine
    assert "time.Until" not in engine
    assert "workqueue.ParallelizeUntil(ctx, 1, len(targets)," in engine  # victims in order
    assert "parallelPreemptions" not in engine
    assert "wl := cq.Pop()\n\t\t_ = cq\n" in engine  # no pending gauges per cycle
    assert "reportCQPendingWorkloads" not in engine
    # a ClusterQueue's admitted Workloads shared with the snapshot, copied on either side's write;
    # the flags in the hierarchy's node types, where Kueue's tests do not compare them
    shared = "whatIfShare(cq), ClusterQueue: hierarchy.WhatIfSharingClusterQueue[*CohortSnapshot]()"
    assert f"Workloads: {shared}," in engine
    assert "maps.Clone" not in engine
    assert "\twhatIfShared, whatIfUsageShared bool; cohort C\n" in engine
    assert "\twhatIfUsageShared bool; parent       C\n" in engine
    # and each node's Usage
    assert "ResourceNode: whatIfShareUsage(cq), A:" in engine
    assert "\twhatIfShareCohortUsage(snap.Cohort(cohort.Name), cohort)\n" in engine
    assert engine.count("r := whatIfOwnUsage(node)") == 2
    assert "resourceNode.Clone()" not in engine and "getResourceNode()" not in engine
    # and each resource group's set of covered resources and the admission checks, never
    # written in place; no empty set of flavors with a ProvisioningRequest check
    assert "cc.ResourceGroups[i] = rg\n" in engine
    assert "A: cq.AdmissionChecks}" in engine and "DeepCopySets" not in engine
    assert '\t_ "sigs.k8s.io/kueue/pkg/util/maps"\n' in engine
    provisioning = "if len(c.provisioningAdmissionChecks) > 0 { flvs = sets.New["
    assert f"var flvs sets.Set[kueue.ResourceFlavorReference]; {provisioning}" in engine
    for write in ("c.Workloads[k] = wi", "delete(c.Workloads, wlKey)"):
        assert f"whatIfOwn(&c.Workloads, c.WhatIfShared()); {write}" in engine
    for write in ("cq.Workloads[workload.Key(wl.Obj)] = wl", "delete(cq.Workloads, workload.Key("):
        assert f"whatIfOwn(&cq.Workloads, cq.WhatIfShared()); {write}" in engine
    # each Namespace read once per requeue of a ClusterQueue's inadmissible workloads
    assert "\tnamespaces := whatIfNamespaces{client: client}; c.rwm.Lock()\n" in engine
    namespace = "types.NamespacedName{Name: wInfo.Obj.Namespace}, &ns)"
    assert f"err := namespaces.get(ctx, {namespace}" in engine
    assert f"client.Get(ctx, {namespace}" not in engine


def engine_sources(tmp_path: Path) -> dict[str, str]:
    """The engine's copy of Kueue, per release built (the fake go's log)."""
    out: dict[str, str] = {}
    release = ""
    for line in (tmp_path / "go.log.engine").read_text().splitlines(keepends=True):
        if found := re.match(r"\s*sigs\.k8s\.io/kueue (v[\w.]+)", line):
            release = found.group(1)
        else:
            out[release] = out.get(release, "") + line
    return out


def test_a_rewrite_for_some_releases_is_applied_to_those_only(tmp_path: Path) -> None:
    """The flavor assigner's resource order (rewrites.tsv: v0.18.0-v0.18.4 only; v0.19 checks
    every resource, and its requests are no map), and the queue order's sticky workload
    (v0.18 only)."""
    assert build_kueue(tmp_path, None).returncode == 0
    sources = engine_sources(tmp_path)
    assert sorted(sources) == sorted(supported())
    for release, text in sources.items():
        rewritten = "for _, rName := range whatIfResourceOrder(requests) { val := requests[rName]"
        assert (rewritten in text) == release.startswith("v0.18."), release
        assert ("for rName, val := range requests {" in text) != (rewritten in text), release
        # the sticky workload's key, compared without being built (v0.18 only: v0.19's
        # comparison takes a matcher of its own)
        for side in "ab":
            sticky = f"{side}Sticky := whatIfSticky(sw.workloadName.Load(), {side}.Obj)"
            assert (sticky in text) == release.startswith("v0.18."), release
            built = f"{side}Sticky := sw.matches(workload.Key({side}.Obj))"
            assert (built in text) != (sticky in text), release


def test_a_release_that_moved_the_code_fails_the_engine_build(tmp_path: Path) -> None:
    """A release whose schedule() no longer takes s.queues.Heads(ctx): the build stops,
    naming the file, the text and the function, instead of building an engine whose ties go
    by map order again."""
    done = build_kueue(tmp_path, kueue_version(), FAKE_GO_MOVED="s.queues.TakeHeads(ctx)")
    assert done.returncode != 0
    assert (
        f"Kueue {kueue_version()}, pkg/scheduler/scheduler.go, func (s *Scheduler) schedule(...): "
        '"s.queues.Heads(ctx)" found 0 times, not once' in done.stderr
    )
    assert not list((tmp_path / "project" / ".toolchain" / "bin").glob("gpuq-whatif-*"))


def test_each_overlay_file_goes_to_the_package_its_first_line_names(tmp_path: Path) -> None:
    assert build_kueue(tmp_path, kueue_version()).returncode == 0
    placed = sorted((tmp_path / "go.log.overlay").read_text().split())
    packages = ("cache/hierarchy", "cache/queue", "cache/scheduler", "controller/core",
                "controller/jobs/deployment", "controller/jobs/leaderworkerset",
                "controller/jobs/pod", "controller/jobs/statefulset", "scheduler",
                "scheduler/flavorassigner")  # fmt: skip
    assert placed == sorted(f"pkg/{p}/zz_whatif.go" for p in packages)


def test_an_overlay_file_that_names_no_package_fails_the_engine_build(tmp_path: Path) -> None:
    def stray(project: Path) -> None:
        (project / "toolchain/go/whatif/overlay/stray.go").write_text("package stray\n")

    done = build_kueue(tmp_path, kueue_version(), before=stray)
    assert done.returncode != 0
    assert "overlay/stray.go names no package of the release's module on its first line" in (
        done.stderr
    )
    assert not list((tmp_path / "project" / ".toolchain" / "bin").glob("gpuq-whatif-*"))
