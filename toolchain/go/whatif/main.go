// Command gpuq-whatif replays a workload mix on Kueue's own scheduling code in simulated time.
//
// It runs the pinned Kueue release's scheduler cache, queue manager, scheduler (with its
// preemptor), workload controller and batch/v1 Job reconciler in one process, against
// controller-runtime's in-memory client, on a fake clock that jumps from event to event once
// everything is quiet: no scheduling cycle would find heads, no object has changed that a
// controller has not seen, no reconcile is queued. Pods are placed by a node-fit check on
// the nodes the stack declares. No wall-clock wait is taken anywhere.
//
// Input (a JSON document on stdin): the Kueue objects the program renders for the stack,
// the manager Configuration, the nodes, and the jobs with their submit times and durations.
// Output (JSON lines on stdout): one "workload" line per job, in input order, then one
// "summary" line. See docs/what-if.md and gpu_queues/whatif/fast.py, which feeds and reads it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	if os.Getenv("GPUQ_WHATIF_LOG") != "" { // Kueue's own log, verbose, to stderr
		ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.Level(-10)})))
	} else {
		ctrllog.SetLogger(logr.Discard())
	}
	// A replay allocates and drops copies of objects at a high rate; Go's default collector
	// spends a fifth of the time on them. Collect at 11x the live heap instead (on the
	// 1,000-workload bench mix 17% less CPU than at 5x, for 0.9 GiB at the peak instead of
	// 0.4), within a soft memory limit sized to the mix once it is read (memoryLimit). GOGC
	// and GOMEMLIMIT, when set, win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(1000)
	}
	if path := os.Getenv("GPUQ_WHATIF_PROFILE"); path != "" { // a CPU profile, for `go tool pprof`
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "gpuq-whatif: %v\n", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var input Input
	dec := json.NewDecoder(bufio.NewReaderSize(in, 1<<20))
	if err := dec.Decode(&input); err != nil {
		return fmt.Errorf("reading the input: %w", err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit(len(input.Jobs)))
	}
	start := time.Now()
	sim, err := newSim(&input)
	if err != nil {
		return err
	}
	if err := sim.replay(); err != nil {
		return err
	}
	heapProfile(sim)
	w := bufio.NewWriterSize(out, 1<<20)
	enc := json.NewEncoder(w)
	for _, r := range sim.results() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	summary := sim.summary()
	summary.WallSeconds = time.Since(start).Seconds()
	if err := enc.Encode(summary); err != nil {
		return err
	}
	return w.Flush()
}

// memoryLimit: the collector's soft limit for a mix of `jobs` workloads: 1.5 GiB, and 128 KiB
// more for each workload, within 3.5 GiB. At a fixed 1.5 GiB, a 15,000-workload replay (Kueue's
// harness baseline) kept its heap at the limit, where the collector runs nearly all the time: a
// quarter of the CPU (docs/what-if.md, Speed). The collector works harder near the limit; the
// replay never fails for it.
func memoryLimit(jobs int) int64 {
	const base, perJob, most = 1536 << 20, 128 << 10, 3584 << 20
	return min(base+int64(jobs)*perJob, most)
}

// heapProfile: GPUQ_WHATIF_HEAP_PROFILE=<file> writes Go's heap profile when the replay ends
// (`go tool pprof -sample_index=inuse_space`: what the engine still holds then, sim kept
// alive to there; alloc_space: everything allocated on the way), a replay cut short by the
// input's until included.
func heapProfile(sim *sim) {
	path := os.Getenv("GPUQ_WHATIF_HEAP_PROFILE")
	if path == "" {
		return
	}
	runtime.GC()
	if f, err := os.Create(path); err == nil {
		_ = pprof.WriteHeapProfile(f)
		_ = f.Close()
	}
	runtime.KeepAlive(sim)
}
