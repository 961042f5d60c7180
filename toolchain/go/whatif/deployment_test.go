package main

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// gpuDeployment: team-a's Deployment of `replicas` pods of gpus GPUs each, submitted at `at`,
// serving for `runs` seconds (negative: until the end).
func gpuDeployment(t *testing.T, index int, name string, replicas int32, gpus string, at, runs float64) JobInput {
	t.Helper()
	meta, selector, template := servingPods(name, gpus)
	d := appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: selector, Template: template}}
	return JobInput{Kind: "Deployment", Index: index, Manifest: rawJSON(t, d), SubmitAt: at, Duration: runs}
}

// deploymentWant: a Deployment's row: admitted at (negative: not), its runs together, its
// pods' GPU-seconds per replica, its current pods' Workloads, admitted ones.
type deploymentWant struct {
	admitted   float64
	ran        string
	runSeconds float64
	replicas   int
	admittedOf int
}

func checkDeployment(t *testing.T, r Result, want deploymentWant) {
	t.Helper()
	switch {
	case want.admitted < 0 && r.AdmittedAt != nil:
		t.Errorf("the Deployment: admitted at %v, want never", *r.AdmittedAt)
	case want.admitted >= 0 && (r.AdmittedAt == nil || *r.AdmittedAt != want.admitted):
		t.Errorf("the Deployment: admitted at %v, want %v", r.AdmittedAt, want.admitted)
	}
	if got := string(mustJSON(t, r.Intervals)); got != want.ran {
		t.Errorf("the Deployment ran %s, want %s", got, want.ran)
	}
	if r.RunSeconds != want.runSeconds {
		t.Errorf("the Deployment's run seconds per replica: %v, want %v", r.RunSeconds, want.runSeconds)
	}
	admitted := 0
	for _, wl := range r.Replicas {
		if wl.Status.Admission != nil {
			admitted++
		}
	}
	if len(r.Replicas) != want.replicas || admitted != want.admittedOf {
		t.Errorf("the Deployment's pods: %d Workloads, %d admitted; want %d, %d", len(r.Replicas), admitted, want.replicas, want.admittedOf)
	}
}

// Quota for both: Deployment d (two pods of 2 GPUs) comes at 30 s; Kueue admits each pod as
// a Workload of its own, both at once; they serve to the end of the replay (3600 s).
func TestADeploymentWithQuotaForAllItsReplicasIsAdmittedAtOnce(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuDeployment(t, 0, "d", 2, "2", 30, -1)}, Until: 3600}
	results, _ := replayed(t, in)
	if len(results) != 1 {
		t.Fatalf("%d lines, want one: the Deployment's", len(results))
	}
	r := results[0]
	checkDeployment(t, r, deploymentWant{admitted: 30, ran: `[{"start":30,"end":null}]`, runSeconds: 3570, replicas: 2, admittedOf: 2})
	if !r.AllRunning || r.Problem != "" || r.Deleted {
		t.Errorf("the Deployment: running %v, problem %q, deleted %v; want running", r.AllRunning, r.Problem, r.Deleted)
	}
	if r.Replicas[0].Name == r.Replicas[1].Name || len(r.Replicas[0].Spec.PodSets) != 1 || r.Replicas[0].Spec.PodSets[0].Count != 1 {
		t.Errorf("its Workloads: %s and %s; want two, of one pod each", r.Replicas[0].Name, r.Replicas[1].Name)
	}
}

// One replica fits, the other waits: one queue of 8 GPUs, Job a (4 GPUs) runs 0-600 s;
// Deployment d (two pods of 3 GPUs) comes at 60 s: its first pod is admitted at once (4+3),
// its second when a ends (4+3+3 > 8), at 600 s: the row's admission is the second's, its wait
// 540 s. Its pods run 60-1000 and 600-1000 s (deleted 400 s after both ran): 940+400 pod
// seconds, 670 a replica; together 600-1000 s.
func TestADeploymentIsAdmittedWhenItsLastReplicaIs(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuJob(t, 0, "a", "4", 0, 600), gpuDeployment(t, 1, "d", 2, "3", 60, 400)}}
	results, _ := replayed(t, in)
	checkRuns(t, results[:1], []runWant{{admitted: 0, ran: `[{"start":0,"end":600}]`, pods: 1}})
	r := results[1]
	checkDeployment(t, r, deploymentWant{admitted: 600, ran: `[{"start":600,"end":1000}]`, runSeconds: 670, replicas: 2, admittedOf: 2})
	if !r.Deleted || r.AllRunning {
		t.Errorf("the Deployment: deleted %v, running %v; want deleted at its time", r.Deleted, r.AllRunning)
	}
}

// Deleted at its duration, a Deployment frees its pods' quota: d (two pods of 4 GPUs) serves
// 0-600 s; Job b (8 GPUs), submitted at 60 s, is admitted at 600 s and runs its 100 s.
func TestADeletedDeploymentFreesTheQuotaOfAllItsPods(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuDeployment(t, 0, "d", 2, "4", 0, 600), gpuJob(t, 1, "b", "8", 60, 100)}}
	results, _ := replayed(t, in)
	checkDeployment(t, results[0], deploymentWant{admitted: 0, ran: `[{"start":0,"end":600}]`, runSeconds: 600, replicas: 2, admittedOf: 2})
	checkRuns(t, results[1:], []runWant{{admitted: 600, ran: `[{"start":600,"end":700}]`, pods: 1}})
}

// A replica never admitted leaves the row pending: d (two pods of 6 GPUs) on 8 GPUs: one
// pod admitted at 0 s, the other never; one of its two Workloads admitted.
func TestADeploymentWithAReplicaNeverAdmittedIsNotAdmitted(t *testing.T) {
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{gpuDeployment(t, 0, "d", 2, "6", 0, -1)}, Until: 100}
	results, _ := replayed(t, in)
	r := results[0]
	checkDeployment(t, r, deploymentWant{admitted: -1, ran: `[]`, runSeconds: 50, replicas: 2, admittedOf: 1})
	if r.Workload == nil || r.Workload.Status.Admission != nil {
		t.Errorf("the row's Workload: %v, want the pending pod's", r.Workload)
	}
}

// Kueue preempts a replica by deleting its pod; the ReplicaSet makes another, under a new
// name, which waits and is admitted again. One queue of 8 GPUs preempting lower priorities:
// low (two pods of 4 GPUs) from 0 s; Job high (4 GPUs) at 60 s preempts one of them (4 GPUs
// free are enough) and runs 120 s; the pod made in its place is admitted at 180 s. The row
// stays admitted at 0 s (both replicas were then); its replicas ran together 0-60 s and from
// 180 s on, one was evicted once: (1000 + 60 + 820) / 2 pod seconds a replica.
func TestAPreemptedReplicaIsMadeAgainUnderANewNameAndAdmittedAgain(t *testing.T) {
	low := withPriority(t, gpuDeployment(t, 0, "low", 2, "4", 0, -1), "low")
	high := withPriority(t, gpuJob(t, 1, "high", "4", 60, 120), "high")
	in := &Input{Objects: preemptingStack(t, "8"), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t), Nodes: gpuNodes(1),
		Jobs: []JobInput{low, high}, Until: 1000}
	results, _ := replayed(t, in)
	r := results[0]
	checkDeployment(t, r, deploymentWant{admitted: 0, ran: `[{"start":0,"end":60},{"start":180,"end":null}]`, runSeconds: 940, replicas: 2, admittedOf: 2})
	if len(r.Evictions) != 1 || !r.AllRunning {
		t.Errorf("the Deployment: evicted %d times, running %v; want once, running", len(r.Evictions), r.AllRunning)
	}
	var names []string
	for _, wl := range r.Replicas {
		names = append(names, wl.Spec.PodSets[0].Template.Name+wl.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "low-whatif-3") {
		t.Errorf("its pods' Workloads: %v; want one of a third pod, low-whatif-3", names)
	}
	checkRuns(t, results[1:], []runWant{{admitted: 60, ran: `[{"start":60,"end":180}]`, pods: 1}})
}

// A Deployment the replay never submits (it comes after the end) or Kueue's webhook refuses
// (its queue name is no name) has no pods: a row with nothing admitted, or the refusal.
func TestADeploymentWithNoPodsIsARowOfItsOwn(t *testing.T) {
	late := gpuDeployment(t, 0, "late", 2, "2", 7200, -1)
	bad := gpuDeployment(t, 1, "bad", 2, "2", 0, -1)
	bad.Manifest = withLabel(t, bad.Manifest, "kueue.x-k8s.io/queue-name", "not a name!")
	in := &Input{Objects: gpuStack(t, "8", kueue.BestEffortFIFO), CRDs: releaseCRDs(t), Configuration: releaseConfiguration(t),
		Nodes: gpuNodes(1), Jobs: []JobInput{late, bad}, Until: 3600}
	results, _ := replayed(t, in)
	if len(results) != 2 {
		t.Fatalf("%d lines, want the two Deployments'", len(results))
	}
	if r := results[0]; r.AdmittedAt != nil || r.AllRunning || r.Workload != nil || r.Problem != "" {
		t.Errorf("the late Deployment: admitted at %v, running %v, problem %q; want nothing", r.AdmittedAt, r.AllRunning, r.Problem)
	}
	if r := results[1]; !strings.Contains(r.Problem, "Deployment webhook refused it") || r.Workload != nil {
		t.Errorf("the refused Deployment: problem %q; want Kueue's Deployment webhook's refusal", r.Problem)
	}
}

// Replicas not given are 1, as the API server stores them, for a Deployment and a StatefulSet
// alike (defaultReplicas); given, they are kept.
func TestReplicasNotGivenAreOneAndGivenAreKept(t *testing.T) {
	for _, c := range []struct {
		manifest string
		want     int32
	}{{`{"metadata":{"name":"s"},"spec":{}}`, 1}, {`{"metadata":{"name":"s"},"spec":{"replicas":3}}`, 3}} {
		in := JobInput{Manifest: []byte(c.manifest)}
		d, err := decodeDeployment(in)
		if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != c.want || d.Namespace != "default" {
			t.Errorf("the Deployment %s: %v, %v; want %d replicas in default", c.manifest, d, err, c.want)
		}
		sts, err := decodeStatefulSet(in)
		if err != nil || sts.Spec.Replicas == nil || *sts.Spec.Replicas != c.want {
			t.Errorf("the StatefulSet %s: %v, %v; want %d replicas", c.manifest, sts, err, c.want)
		}
	}
}
