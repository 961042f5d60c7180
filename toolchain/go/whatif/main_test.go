package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// Bad input stops the engine before it replays anything, with a message that names the part
// of the input at fault.
func TestBadInputIsRefusedNamingWhatIsWrong(t *testing.T) {
	good := gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 0, "ok", "1", 0, 10))
	cases := []struct {
		name   string
		input  func() any
		prefix string
	}{
		{"not JSON", func() any { return `{"objects": [` }, "reading the input: "},
		{"an object of no known kind", func() any {
			in := *good
			in.Objects = append([]json.RawMessage{json.RawMessage(`{"apiVersion":"v1","kind":"Nope","metadata":{"name":"x"}}`)}, in.Objects...)
			return in
		}, "object 0: "},
		{"an object without apiVersion", func() any {
			in := *good
			in.Objects = append(in.Objects[:1:1], json.RawMessage(`{"kind":"Namespace","metadata":{"name":"x"}}`))
			return in
		}, "object 1: "},
		{"a CRD that is not one", func() any {
			in := *good
			in.CRDs = []json.RawMessage{json.RawMessage(`"crd"`)}
			return in
		}, "crd 0: "},
		{"a Configuration of another kind", func() any {
			in := *good
			in.Configuration = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Nope\n"
			return in
		}, "the Kueue manager configuration: "},
		{"a Job that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "Job", Index: 3, Manifest: json.RawMessage(`[1]`)}}
			return in
		}, "job 3: "},
		{"a Pod that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "Pod", Index: 2, Manifest: json.RawMessage(`"pod"`)}}
			return in
		}, "pod 2: "},
		{"a PyTorchJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "PyTorchJob", Index: 4, Manifest: json.RawMessage(`7`)}}
			return in
		}, "PyTorchJob 4: "},
		{"an MPIJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "MPIJob", Index: 5, Manifest: json.RawMessage(`"mpi"`)}}
			return in
		}, "MPIJob 5: "},
		{"a TFJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "TFJob", Index: 6, Manifest: json.RawMessage(`[]`)}}
			return in
		}, "TFJob 6: "},
		{"an XGBoostJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "XGBoostJob", Index: 7, Manifest: json.RawMessage(`true`)}}
			return in
		}, "XGBoostJob 7: "},
		{"a PaddleJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "PaddleJob", Index: 8, Manifest: json.RawMessage(`"paddle"`)}}
			return in
		}, "PaddleJob 8: "},
		{"a JAXJob that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "JAXJob", Index: 9, Manifest: json.RawMessage(`9`)}}
			return in
		}, "JAXJob 9: "},
		{"a PaddleJob its defaulting fails on", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "PaddleJob", Index: 10, Manifest: json.RawMessage(
				`{"metadata":{"name":"p"},"spec":{"elasticPolicy":{},"paddleReplicaSpecs":{"Master":{}}}}`)}}
			return in
		}, "PaddleJob 10: the training operator's defaulting failed on it"},
		{"a RayCluster that is not one", func() any {
			in := *good
			in.Jobs = []JobInput{{Kind: "RayCluster", Index: 11, Manifest: json.RawMessage(`false`)}}
			return in
		}, "RayCluster 11: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			input, ok := tc.input().(string)
			if !ok {
				input = string(rawJSON(t, tc.input()))
			}
			err := run(strings.NewReader(input), &out)
			if err == nil || !strings.HasPrefix(err.Error(), tc.prefix) {
				t.Fatalf("run: %v; want an error starting %q", err, tc.prefix)
			}
			if out.Len() != 0 {
				t.Errorf("output despite the error: %s", out.String())
			}
		})
	}
}

// Kueue's feature gates are the process's, and a refused gate stays refused for every later
// Configuration (the engine loads one per process): the test runs in a process of its own.
func TestAFeatureGateKueueDoesNotKnowIsRefused(t *testing.T) {
	if os.Getenv("GPUQ_WHATIF_TEST_ALONE") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestAFeatureGateKueueDoesNotKnowIsRefused$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GPUQ_WHATIF_TEST_ALONE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	in := gpuInput(t, kueue.BestEffortFIFO)
	in.Configuration += "\nfeatureGates:\n  NoSuchGate: true\n"
	err := run(bytes.NewReader(rawJSON(t, in)), &bytes.Buffer{})
	if err == nil || !strings.HasPrefix(err.Error(), "feature gates: ") || !strings.Contains(err.Error(), "NoSuchGate") {
		t.Fatalf("run: %v; want an error on the feature gate NoSuchGate", err)
	}
}

// The output: one workload line per job, in input order, then the summary.
func TestRunWritesAWorkloadLinePerJobThenTheSummary(t *testing.T) {
	in := gpuInput(t, kueue.BestEffortFIFO, gpuJob(t, 7, "b", "1", 5, 10), gpuJob(t, 2, "a", "1", 0, 10))
	var out bytes.Buffer
	if err := run(bytes.NewReader(rawJSON(t, in)), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []struct {
		typ   string
		index int
	}{{"workload", 7}, {"workload", 2}, {"summary", 0}}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, w := range want {
		var line struct {
			Type  string `json:"type"`
			Index int    `json:"index"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &line); err != nil {
			t.Fatal(err)
		}
		if line.Type != w.typ || line.Index != w.index {
			t.Errorf("line %d: %s %d, want %s %d", i, line.Type, line.Index, w.typ, w.index)
		}
	}
}
