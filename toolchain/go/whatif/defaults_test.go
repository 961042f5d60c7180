package main

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

// The release's CRDs fill in what the API server would: a ClusterQueue written without a
// queueing strategy, flavor fungibility or preemption gets the schema's defaults.
func TestTheReleasesCRDsDefaultAClusterQueue(t *testing.T) {
	defaults, err := loadCRDDefaults(releaseCRDs(t))
	if err != nil {
		t.Fatal(err)
	}
	scheme := utiltesting.NewClientBuilder().Build().Scheme()
	cq := &kueue.ClusterQueue{}
	cq.Name = "bare"
	if err := defaults.apply(scheme, cq); err != nil {
		t.Fatal(err)
	}
	if cq.Spec.QueueingStrategy != kueue.BestEffortFIFO {
		t.Errorf("queueingStrategy %q, want BestEffortFIFO", cq.Spec.QueueingStrategy)
	}
	if cq.Spec.FlavorFungibility == nil || cq.Spec.Preemption == nil {
		t.Errorf("flavorFungibility %v, preemption %v: not defaulted", cq.Spec.FlavorFungibility, cq.Spec.Preemption)
	}
	ns := &corev1.Namespace{}
	ns.Name = "no-schema"
	if err := defaults.apply(scheme, ns); err != nil || !reflect.DeepEqual(ns, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "no-schema"}}) {
		t.Errorf("a kind without a CRD: %v, %+v", err, ns)
	}
}

func TestACRDThatIsNotOneIsRefusedByIndex(t *testing.T) {
	crds := append(releaseCRDs(t)[:1:1], json.RawMessage(`[]`))
	if _, err := loadCRDDefaults(crds); err == nil || err.Error()[:6] != "crd 1:" {
		t.Errorf("loadCRDDefaults: %v", err)
	}
}

func TestTheMemoryLimitGrowsWithTheMixWithinItsCeiling(t *testing.T) {
	for jobs, want := range map[int]int64{0: 1536 << 20, 1000: 1536<<20 + 1000*128<<10, 15000: 1536<<20 + 15000*128<<10, 50000: 3584 << 20} {
		if got := memoryLimit(jobs); got != want {
			t.Errorf("memoryLimit(%d) = %d MiB, want %d MiB", jobs, got>>20, want>>20)
		}
	}
}
