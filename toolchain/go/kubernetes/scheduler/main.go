// Command kube-scheduler is the pinned release's kube-scheduler with two score plugins added
// through its out-of-tree plugin API (app.WithPlugin), for the sandbox.
//
// Among nodes of equal score the scheduler takes whichever its parallel filter happened to
// list first (no rule, and not the same from run to run), so two replays of one mix on the
// sandbox could place a job's pods on different nodes and tell different days once whole-node
// jobs are involved. The plugins break those ties by node name, the first name winning, which
// is the rule the fast what-if engine follows (toolchain/go/whatif/nodes.go); the sandbox's
// scheduler configuration (sandbox/control_plane.py) gives the default plugins weights so
// large that the tie-breakers decide between nodes of equal score only.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(HighName, newTieBreak(high)),
		app.WithPlugin(LowName, newTieBreak(low)),
	)
	os.Exit(cli.Run(command))
}
