package main

// A LeaderWorkerSet's row of the report, from its groups' jobs: admitted once all its groups
// have been (when the last of them was first admitted), its GPU time its groups' runs over
// them, its evictions theirs.

import (
	"cmp"
	"slices"
)

// lwsResult: the LWS's line. Workload is a group's (one not admitted, when there is one, for
// Kueue's message); Replicas are all its groups' Workloads (the report counts the admitted and
// reads their flavors). RunSeconds is its groups' run time over its groups, as a job's is per
// pod: times the GPUs of all its groups it is theirs.
func (s *sim) lwsResult(j *jobState, r Result) Result {
	d := j.lws
	var runs [][]interval
	var last *jobState // the group admitted last
	all := len(d.groups) == d.replicas
	r.AllRunning, r.Deleted = all && !d.gone, d.gone
	for _, i := range d.groups {
		gj := s.jobs[i]
		r.RunSeconds += gj.runSeconds / float64(d.replicas)
		r.Evictions = append(r.Evictions, gj.evictions...)
		r.Timeline = append(r.Timeline, gj.timeline...)
		runs = append(runs, gj.intervals)
		r.AllRunning = r.AllRunning && gj.running
		if gj.stuck != "" && r.Stuck == "" {
			r.Stuck = gj.stuck
		}
		all = all && gj.admittedAt != nil
		if gj.admittedAt != nil && (last == nil || *gj.admittedAt > *last.admittedAt) {
			last = gj
		}
		if wl := s.replicaWorkload(gj); wl != nil {
			r.Replicas = append(r.Replicas, wl)
			if r.Workload == nil || r.Workload.Status.Admission != nil && wl.Status.Admission == nil {
				r.Workload = wl
			}
		}
	}
	if all && last != nil {
		r.AdmittedAt, r.FirstAdmission = last.admittedAt, last.first
	}
	slices.SortStableFunc(r.Timeline, func(a, b step) int { return cmp.Compare(a.At, b.At) })
	r.Intervals = together(runs)
	return r
}
