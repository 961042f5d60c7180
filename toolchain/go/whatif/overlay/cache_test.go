// Added to sigs.k8s.io/kueue/pkg/cache/scheduler at build time (toolchain/build.sh whatif_kueue),
// as a test of the package (never built into the engine): the admitted Workloads and the
// Usage a snapshot and the cache share (overlay/cache.go) stay each side's own, as Kueue's
// clones kept them. Run
// by tests/toolchain/test_whatif_go.py with Kueue's own tests of the package.
package scheduler

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/resources"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
	utiltestingapi "sigs.k8s.io/kueue/pkg/util/testing/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

func TestWhatIfSnapshotsAndTheCacheKeepTheirOwnWorkloads(t *testing.T) {
	ctx, log := utiltesting.ContextWithLog(t)
	cache := New(utiltesting.NewFakeClient())
	cache.AddOrUpdateResourceFlavor(log, utiltestingapi.MakeResourceFlavor("default").Obj())
	quota := utiltestingapi.MakeFlavorQuotas("default").Resource(corev1.ResourceCPU, "10").Obj()
	if err := cache.AddClusterQueue(ctx, utiltestingapi.MakeClusterQueue("cq").ResourceGroup(*quota).Obj()); err != nil {
		t.Fatal(err)
	}
	admitted := func(name string) *kueue.Workload { return whatIfAdmitted(name, "1") }
	snapshot := func() *Snapshot { return whatIfSnapshot(t, ctx, cache) }
	has := func(what string, m map[workload.Reference]*workload.Info, want ...workload.Reference) {
		t.Helper()
		got := slices.Sorted(func(yield func(workload.Reference) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(got, want) {
			t.Errorf("%s holds %v, want %v", what, got, want)
		}
	}
	cached := func() map[workload.Reference]*workload.Info { return cache.hm.ClusterQueue("cq").Workloads }

	cache.AddOrUpdateWorkload(log, admitted("a"))
	cache.AddOrUpdateWorkload(log, admitted("b"))
	first, second := snapshot(), snapshot()
	// The cache changes after two snapshots took its map: neither sees the change.
	cache.AddOrUpdateWorkload(log, admitted("c"))
	if err := cache.DeleteWorkload(log, "/a"); err != nil {
		t.Fatal(err)
	}
	has("the cache", cached(), "/b", "/c")
	has("the first snapshot", first.ClusterQueue("cq").Workloads, "/a", "/b")
	has("the second snapshot", second.ClusterQueue("cq").Workloads, "/a", "/b")

	// A snapshot changes (a preemption's simulation removing a victim, an admission added): the
	// cache and the snapshots before it do not see it, and it does not see the cache's next change.
	third := snapshot()
	cq := third.ClusterQueue("cq")
	third.RemoveWorkload(cq.Workloads["/b"])
	third.AddWorkload(workload.NewInfo(admitted("d")))
	cache.AddOrUpdateWorkload(log, admitted("e"))
	has("the third snapshot", cq.Workloads, "/c", "/d")
	has("the cache", cached(), "/b", "/c", "/e")
	has("the first snapshot", first.ClusterQueue("cq").Workloads, "/a", "/b")
}

// A ClusterQueue's and its Cohort's Usage, shared by the cache and its snapshots
// (whatIfShareUsage), stay each side's own too: Kueue's resourceNode.Clone kept them so.
func TestWhatIfSnapshotsAndTheCacheKeepTheirOwnUsage(t *testing.T) {
	ctx, log := utiltesting.ContextWithLog(t)
	cache := New(utiltesting.NewFakeClient())
	cache.AddOrUpdateResourceFlavor(log, utiltestingapi.MakeResourceFlavor("default").Obj())
	for _, name := range []kueue.ClusterQueueReference{"cq", "other"} {
		quota := utiltestingapi.MakeFlavorQuotas("default").Resource(corev1.ResourceCPU, "4").Obj()
		cq := utiltestingapi.MakeClusterQueue(string(name)).Cohort("pool").ResourceGroup(*quota).Obj()
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			t.Fatal(err)
		}
	}
	admitted := whatIfAdmitted
	snapshot := func() *Snapshot { return whatIfSnapshot(t, ctx, cache) }
	cpu := resources.FlavorResource{Flavor: "default", Resource: corev1.ResourceCPU}
	// Millicores used by the ClusterQueue cq and by its Cohort (no lending limit: all of it).
	type usage struct{ cq, cohort int64 }
	inSnapshot := func(s *Snapshot) usage {
		cq := s.ClusterQueue("cq")
		return usage{cq.ResourceNode.Usage[cpu].Int64(), cq.Parent().ResourceNode.Usage[cpu].Int64()}
	}
	inCache := func() usage {
		cq := cache.hm.ClusterQueue("cq")
		return usage{cq.resourceNode.Usage[cpu].Int64(), cq.Parent().resourceNode.Usage[cpu].Int64()}
	}
	is := func(what string, got, want usage) {
		t.Helper()
		if got != want {
			t.Errorf("%s uses %+v millicores, want %+v", what, got, want)
		}
	}

	cache.AddOrUpdateWorkload(log, admitted("a", "1"))
	first, second := snapshot(), snapshot()
	// The cache changes after two snapshots took its nodes' Usage: neither sees the change.
	cache.AddOrUpdateWorkload(log, admitted("b", "2"))
	is("the cache", inCache(), usage{3000, 3000})
	is("the first snapshot", inSnapshot(first), usage{1000, 1000})
	is("the second snapshot", inSnapshot(second), usage{1000, 1000})

	// A snapshot changes (an admission assumed, a preemption's simulation removing a victim):
	// the cache and the snapshots before it do not see it, and it does not see the cache's next
	// change.
	third := snapshot()
	third.AddWorkload(workload.NewInfo(admitted("c", "4")))
	is("the third snapshot", inSnapshot(third), usage{7000, 7000})
	third.RemoveWorkload(third.ClusterQueue("cq").Workloads["/a"])
	if err := cache.DeleteWorkload(log, "/b"); err != nil {
		t.Fatal(err)
	}
	is("the third snapshot", inSnapshot(third), usage{6000, 6000})
	is("the cache", inCache(), usage{1000, 1000})
	is("the first snapshot", inSnapshot(first), usage{1000, 1000})
	is("the second snapshot", inSnapshot(second), usage{1000, 1000})
}

// whatIfAdmitted: a Workload of `cpus` CPUs of the flavor "default", its quota reserved in the
// ClusterQueue cq.
func whatIfAdmitted(name, cpus string) *kueue.Workload {
	assignment := utiltestingapi.MakePodSetAssignment(kueue.DefaultPodSetName).
		Assignment(corev1.ResourceCPU, "default", cpus).Obj()
	return utiltestingapi.MakeWorkload(name, "").Request(corev1.ResourceCPU, cpus).
		ReserveQuotaAt(utiltestingapi.MakeAdmission("cq").PodSets(assignment).Obj(), time.Now()).Obj()
}

// whatIfSnapshot: the scheduler's snapshot of the cache, as it takes one in a cycle.
func whatIfSnapshot(t *testing.T, ctx context.Context, cache *Cache) *Snapshot {
	t.Helper()
	s, err := cache.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
