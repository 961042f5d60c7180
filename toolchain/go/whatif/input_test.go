package main

import (
	"encoding/json"
	"strings"
	"testing"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// withField: a manifest with one field (by its path) set to value.
func withField(t *testing.T, manifest []byte, value any, path ...string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatal(err)
	}
	inner := m
	for _, k := range path[:len(path)-1] {
		next, _ := inner[k].(map[string]any)
		if next == nil {
			next = map[string]any{}
			inner[k] = next
		}
		inner = next
	}
	inner[path[len(path)-1]] = value
	return rawJSON(t, m)
}

// A field of another type than its kind's API gives it is refused as the API server's schema
// refuses it: that job's row says so, and the replay goes on with the rest of the mix.
func TestAFieldOfTheWrongTypeIsThatJobsProblemNotAFailedReplay(t *testing.T) {
	for _, c := range []struct {
		name  string
		bad   JobInput
		value any // a boolean's "yes", a string's 4
		path  []string
	}{
		{"job", gpuJob(t, 0, "bad", "1", 0, 100), "yes", []string{"spec", "template", "spec", "hostNetwork"}},
		{"jobset", gpuJobSet(t, 0, "bad", false, 1, 1, 0, 100), "yes", []string{"spec", "network", "enableDNSHostnames"}},
		{"pytorchjob", gpuPyTorchJob(t, 0, "bad", 1, 0, 100), 4, []string{"spec", "nprocPerNode"}},
		{"mpijob", gpuMPIJob(t, 0, "bad", 1, 0, 100), "yes", []string{"spec", "runLauncherAsWorker"}},
		{"tfjob", gpuKubeflowJobOf(t, "TFJob", 0, "bad", 2, 0, 100), "yes", []string{"spec", "enableDynamicWorker"}},
		{"xgboostjob", gpuKubeflowJobOf(t, "XGBoostJob", 0, "bad", 2, 0, 100), "yes", []string{"spec", "runPolicy", "backoffLimit"}},
		{"paddlejob", gpuKubeflowJobOf(t, "PaddleJob", 0, "bad", 2, 0, 100), "yes", []string{"spec", "elasticPolicy", "minReplicas"}},
		{"jaxjob", gpuKubeflowJobOf(t, "JAXJob", 0, "bad", 2, 0, 100), "yes", []string{"spec", "runPolicy", "activeDeadlineSeconds"}},
		{"raycluster", gpuRayCluster(t, 0, "bad", 1, 0, 100), "yes", []string{"spec", "enableInTreeAutoscaling"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.bad.Manifest = withField(t, c.bad.Manifest, c.value, c.path...)
			want := c.path[len(c.path)-1]
			results, _ := replayed(t, gpuInput(t, kueue.BestEffortFIFO, c.bad, gpuJob(t, 1, "fine", "2", 0, 100)))
			if p := results[0].Problem; !strings.HasPrefix(p, "the API refused it: ") || !strings.Contains(p, want) {
				t.Errorf("the bad one's problem: %q, want the API's refusal naming %s", p, want)
			}
			if r := results[1]; r.AdmittedAt == nil || *r.AdmittedAt != 0 || r.Problem != "" {
				t.Errorf("the fine Job: admitted at %v, problem %q; want admitted at 0", r.AdmittedAt, r.Problem)
			}
		})
	}
}
