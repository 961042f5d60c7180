// Added to sigs.k8s.io/kueue/pkg/cache/scheduler at build time (toolchain/build.sh whatif_kueue),
// as a test of the package (never built into the engine): the admitted Workloads a snapshot
// and the cache share (overlay/cache.go) stay each side's own, as Kueue's clone kept them. Run
// by tests/toolchain/test_whatif_go.py with Kueue's own tests of the package.
package scheduler

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
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
	admitted := func(name string) *kueue.Workload {
		assignment := utiltestingapi.MakePodSetAssignment(kueue.DefaultPodSetName).
			Assignment(corev1.ResourceCPU, "default", "1").Obj()
		return utiltestingapi.MakeWorkload(name, "").Request(corev1.ResourceCPU, "1").
			ReserveQuotaAt(utiltestingapi.MakeAdmission("cq").PodSets(assignment).Obj(), time.Now()).Obj()
	}
	snapshot := func() *Snapshot {
		s, err := cache.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
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
