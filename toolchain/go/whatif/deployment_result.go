package main

// A Deployment's row of the report, from its pods' jobs: admitted once all its replicas have
// been (when the last of them was first admitted), its GPU time summed over its pods' runs,
// its evictions theirs.

import (
	"cmp"
	"slices"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// deploymentResult: the Deployment's line. Workload is a current pod's (one not admitted, when
// there is one, for Kueue's message); Replicas are all its current pods' Workloads (the
// report counts the admitted and reads their flavors). RunSeconds is its pods' run time over
// its replicas, as a job's is per pod: times the GPUs of all its replicas it is theirs.
func (s *sim) deploymentResult(j *jobState, r Result) Result {
	d := j.deploy
	var runs [][]interval
	var lastFirst *jobState // the replica admitted last (its pod first admitted of its replica)
	all := true
	for _, slot := range d.slots {
		var first *jobState
		var ran []interval
		for _, i := range slot {
			rj := s.jobs[i]
			r.RunSeconds += rj.runSeconds / float64(d.replicas)
			r.Evictions = append(r.Evictions, rj.evictions...)
			r.Timeline = append(r.Timeline, rj.timeline...)
			ran = append(ran, rj.intervals...)
			if rj.admittedAt != nil && (first == nil || *rj.admittedAt < *first.admittedAt) {
				first = rj
			}
		}
		runs = append(runs, ran)
		all = all && first != nil
		if first != nil && (lastFirst == nil || *first.admittedAt > *lastFirst.admittedAt) {
			lastFirst = first
		}
	}
	if all && lastFirst != nil {
		r.AdmittedAt, r.FirstAdmission = lastFirst.admittedAt, lastFirst.first
	}
	slices.SortStableFunc(r.Timeline, func(a, b step) int { return cmp.Compare(a.At, b.At) })
	r.Intervals = together(runs)
	current := d.current(s)
	r.AllRunning, r.Deleted = !d.gone && len(current) == d.replicas, d.gone
	for _, rj := range current {
		wl := s.replicaWorkload(rj)
		r.AllRunning = r.AllRunning && rj.running
		if rj.stuck != "" && r.Stuck == "" {
			r.Stuck = rj.stuck
		}
		if wl == nil {
			continue
		}
		r.Replicas = append(r.Replicas, wl)
		if r.Workload == nil || r.Workload.Status.Admission != nil && wl.Status.Admission == nil {
			r.Workload = wl
		}
	}
	return r
}

// replicaWorkload: the pod's Workload as it stands, or, deleted with its Deployment, as last
// seen.
func (s *sim) replicaWorkload(rj *jobState) *kueue.Workload {
	if rj.workload == nil {
		return nil
	}
	wl := &kueue.Workload{}
	if err := s.get(*rj.workload, wl); err != nil {
		if rj.last == nil {
			return nil
		}
		wl = rj.last.DeepCopy()
	}
	wl.ManagedFields = nil
	return wl
}

// together: the spans in which every replica had a pod running (each replica's runs, one
// list each, not overlapping), oldest first.
func together(runs [][]interval) []interval {
	out := []interval{}
	if len(runs) == 0 {
		return out
	}
	out = append(out, runs[0]...)
	for _, next := range runs[1:] {
		var both []interval
		for _, a := range out {
			for _, b := range next {
				start := max(a.Start, b.Start)
				end := minEnd(a.End, b.End)
				if end == nil || *end > start {
					both = append(both, interval{Start: start, End: end})
				}
			}
		}
		out = both
	}
	slices.SortFunc(out, func(a, b interval) int { return cmp.Compare(a.Start, b.Start) })
	if out == nil {
		out = []interval{}
	}
	return out
}

// minEnd: the earlier of two ends (nil: still running).
func minEnd(a, b *float64) *float64 {
	if a == nil || b != nil && *b < *a {
		return b
	}
	return a
}
