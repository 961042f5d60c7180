package main

// Unit tests of the host's pure parts (run by tests/toolchain/test_language_host.py through
// `go test`); the real-CLI behaviour is tested there too.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

func TestPluginVersionFromPEP440(t *testing.T) {
	ok := map[string]string{
		"1":                  "1.0.0",
		"0.1":                "0.1.0",
		"4.25.0":             "4.25.0",
		"4.3.2.1":            "4.3.2.1",
		"2.1a123456789":      "2.1.0-alpha.123456789",
		"1.2.3b7":            "1.2.3-beta.7",
		"3.2.1rc654321":      "3.2.1-rc.654321",
		"1.2.3.dev456":       "1.2.3+dev456",
		"3.2.post32":         "3.2.0+post32",
		"3.2.post1.dev0":     "3.2.0+post1dev0",
		"10.0.0rc2.post3":    "10.0.0-rc.2+post3",
		"7.13.0a0.post2.dev": "7.13.0-alpha.0+post2dev",
	}
	for in, want := range ok {
		got, err := pluginVersion(in)
		if err != nil || got != want {
			t.Errorf("pluginVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":             "cannot parse empty string",
		"10!3.2.1":     "epochs are not supported",
		"1.":           "'.' still unparsed",
		"1.2.3dev7890": "'dev7890' still unparsed",
		"1.2.3+local":  "'+local' still unparsed",
		" 1 . 2":       "does not start with a release number",
		"1.2.3é":       "not ascii",
	}
	for in, want := range bad {
		got, err := pluginVersion(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("pluginVersion(%q) = %q, %v; want an error containing %q", in, got, err, want)
		}
	}
}

func TestPackageDependency(t *testing.T) {
	k8s := plugin.DependencyInfo{Name: "pulumi-kubernetes", Version: "4.25.0"}
	// No pulumi-plugin.json: name and version from the package.
	if d := packageDependency(k8s, nil); d.GetName() != "kubernetes" || d.GetVersion() != "v4.25.0" || d.GetKind() != "resource" {
		t.Errorf("plain pulumi-* package: %v", d)
	}
	// pulumi-plugin.json wins, and may say there is no plugin.
	meta := &plugin.PulumiPluginJSON{Resource: true, Name: "k8s", Version: "v9.9.9", Server: "https://example.invalid"}
	if d := packageDependency(k8s, meta); d.GetName() != "k8s" || d.GetVersion() != "v9.9.9" || d.GetServer() != "https://example.invalid" {
		t.Errorf("plugin json: %v", d)
	}
	if d := packageDependency(k8s, &plugin.PulumiPluginJSON{Resource: false}); d != nil {
		t.Errorf("resource: false must give no plugin, got %v", d)
	}
	param := &plugin.PulumiPluginJSON{Resource: true, Name: "terraform-provider", Version: "0.10.0",
		Parameterization: &plugin.PulumiParameterizationJSON{Name: "random", Version: "3.6.0", Value: []byte("eyJ9")}}
	if d := packageDependency(plugin.DependencyInfo{Name: "pulumi-random", Version: "3.6.0"}, param); d.GetParameterization().GetName() != "random" || d.GetVersion() != "v0.10.0" {
		t.Errorf("parameterized: %v", d)
	}
	// A version with no plugin equivalent drops the package.
	if d := packageDependency(plugin.DependencyInfo{Name: "pulumi-x", Version: "1.0+local"}, nil); d != nil {
		t.Errorf("unparsable version must give no plugin, got %v", d)
	}
}

func TestConfigEnvNeverNull(t *testing.T) {
	for _, tc := range []struct {
		config map[string]string
		keys   []string
		want   []string
	}{
		{nil, nil, []string{`PULUMI_CONFIG={}`, `PULUMI_CONFIG_SECRET_KEYS=[]`}},
		{map[string]string{}, []string{}, []string{`PULUMI_CONFIG={}`, `PULUMI_CONFIG_SECRET_KEYS=[]`}},
		{map[string]string{"p:a": `{"b":1}`}, []string{"p:a"},
			[]string{`PULUMI_CONFIG={"p:a":"{\"b\":1}"}`, `PULUMI_CONFIG_SECRET_KEYS=["p:a"]`}},
	} {
		got, err := configEnv(tc.config, tc.keys)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("configEnv(%v, %v) = %v, %v; want %v", tc.config, tc.keys, got, err, tc.want)
		}
	}
}

func TestExecutorArgs(t *testing.T) {
	req := &pulumirpc.RunRequest{
		MonitorAddress: "127.0.0.1:1", Project: "p", Stack: "s", Pwd: "/w/sub", DryRun: true,
		Parallel: 8, Organization: "org", Args: []string{"x", "--y"},
		Info: &pulumirpc.ProgramInfo{RootDirectory: "/w", ProgramDirectory: "/w/sub", EntryPoint: "."},
	}
	want := []string{"--monitor", "127.0.0.1:1", "--engine", "127.0.0.1:2", "--project", "p",
		"--root_directory", "/w", "--stack", "s", "--pwd", "/w/sub", "--dry_run", "true",
		"--parallel", "8", "--tracing", "http://t", "--organization", "org", ".", "x", "--y"}
	if got := executorArgs(req, "127.0.0.1:2", "http://t"); !slices.Equal(got, want) {
		t.Errorf("executorArgs =\n%v\nwant\n%v", got, want)
	}
	// Empty values are left out; the entry point falls back to the deprecated field, then ".".
	bare := &pulumirpc.RunRequest{Program: "main.py", Parallel: 0}
	want = []string{"--dry_run", "false", "--parallel", "0", "main.py"}
	if got := executorArgs(bare, "", ""); !slices.Equal(got, want) {
		t.Errorf("executorArgs(bare) = %v, want %v", got, want)
	}
	if got := executorArgs(&pulumirpc.RunRequest{}, "", ""); got[len(got)-1] != "." {
		t.Errorf("no entry point must run the directory, got %v", got)
	}
}

func TestExitMessage(t *testing.T) {
	run := func(script string) error { return exec.Command("sh", "-c", script).Run() }
	if msg, bail := exitMessage(run("exit 32")); !bail || msg != "" {
		t.Errorf("exit 32: %q, %v", msg, bail)
	}
	if msg, bail := exitMessage(run("exit 3")); bail || msg != "program exited with non-zero exit code: 3" {
		t.Errorf("exit 3: %q, %v", msg, bail)
	}
	if msg, _ := exitMessage(run("kill -9 $$")); !strings.Contains(msg, "terminated by signal 9: killed") {
		t.Errorf("SIGKILL: %q", msg)
	}
	if msg, _ := exitMessage(exec.Command("/nonexistent/python").Run()); !strings.HasPrefix(msg, "problem executing program (could not run language executor)") {
		t.Errorf("no executable: %q", msg)
	}
}

func TestPythonOptions(t *testing.T) {
	info := func(m map[string]any) *pulumirpc.ProgramInfo {
		s, err := structpb.NewStruct(m)
		if err != nil {
			t.Fatal(err)
		}
		return &pulumirpc.ProgramInfo{RootDirectory: "/r", ProgramDirectory: "/r/p", Options: s}
	}
	o, err := pythonOptions(info(map[string]any{"virtualenv": "../venv", "toolchain": "uv", "typechecker": "pyright"}), false)
	if err != nil || o.Virtualenv != "../venv" || o.Toolchain != toolchain.Uv || o.Typechecker != toolchain.TypeCheckerPyright || o.Root != "/r" || o.ProgramDir != "/r/p" {
		t.Errorf("options: %+v, %v", o, err)
	}
	for opt, bad := range map[string]any{"virtualenv": 3.0, "toolchain": "conda", "typechecker": "pytype"} {
		if _, err := pythonOptions(info(map[string]any{opt: bad}), false); err == nil || !strings.Contains(err.Error(), opt) {
			t.Errorf("%s=%v: want an error naming %s, got %v", opt, bad, opt, err)
		}
	}
	// Plugins never run in the ambient Python with pip: "venv" unless told otherwise.
	if o, _ := pythonOptions(info(map[string]any{}), true); o.Virtualenv != "venv" {
		t.Errorf("plugin default virtualenv: %q", o.Virtualenv)
	}
	if o, _ := pythonOptions(info(map[string]any{}), false); o.Virtualenv != "" {
		t.Errorf("program default virtualenv: %q", o.Virtualenv)
	}
	if o, _ := pythonOptions(info(map[string]any{"toolchain": "poetry"}), true); o.Virtualenv != "" {
		t.Errorf("poetry plugin virtualenv: %q", o.Virtualenv)
	}
}

func TestPolicyStackEnv(t *testing.T) {
	if env, err := policyStackEnv(nil); err != nil || env != nil {
		t.Errorf("nil configuration: %v, %v", env, err)
	}
	env, err := policyStackEnv(&pulumirpc.AnalyzerStackConfigureRequest{Stack: "dev", Project: "p", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PULUMI_PROJECT=p", "PULUMI_STACK=dev", "PULUMI_DRY_RUN=true", "PULUMI_CONFIG={}"}
	if !slices.Equal(env, want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	env, _ = policyStackEnv(&pulumirpc.AnalyzerStackConfigureRequest{
		Organization: "o", Config: map[string]string{"p:k": "v"}})
	var cfg map[string]string
	last := env[len(env)-1]
	if err := json.Unmarshal([]byte(strings.TrimPrefix(last, "PULUMI_CONFIG=")), &cfg); err != nil || cfg["p:k"] != "v" || env[0] != "PULUMI_ORGANIZATION=o" {
		t.Errorf("env = %v", env)
	}
}

// TestRequiredPackagesOfTheProjectVenv lists the plugins the repo's own .venv needs (make venv
// first): pulumi-kubernetes's pulumi-plugin.json names the kubernetes plugin at its pinned
// version; pulumi-policy (no plugin) and non-Pulumi packages are left out.
func TestRequiredPackagesOfTheProjectVenv(t *testing.T) {
	root, err := filepath.Abs("../../../..")
	if err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(root, ".venv")
	if !toolchain.IsVirtualEnv(venv) {
		t.Fatalf("%s is not a virtualenv: run `make venv`", venv)
	}
	pins, err := os.ReadFile(filepath.Join(root, "toolchain", "pins.env"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PULUMI_KUBERNETES_VERSION=(\S+)$`).FindSubmatch(pins)
	if m == nil {
		t.Fatal("no PULUMI_KUBERNETES_VERSION in pins.env")
	}
	tc, err := toolchain.ResolveToolchain(toolchain.PythonOptions{Root: root, ProgramDir: root, Virtualenv: ".venv", Toolchain: toolchain.Pip})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := requiredPackages(t.Context(), tc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range deps {
		got = append(got, d.GetKind()+":"+d.GetName()+"@"+d.GetVersion())
	}
	if want := []string{"resource:kubernetes@v" + string(m[1])}; !slices.Equal(got, want) {
		t.Errorf("required packages of .venv = %v, want %v", got, want)
	}
}

func TestWriteTreeWritesEveryFileAndRefusesAPathOutsideTheDirectory(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{"setup.py": []byte("a"), "pkg/__init__.py": []byte("b")}
	if err := writeTree(dir, files); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s: %q, %v", name, got, err)
		}
	}
	for _, bad := range []string{"../escape.py", "/etc/passwd-like"} {
		if err := writeTree(dir, map[string][]byte{bad: nil}); err == nil || !strings.Contains(err.Error(), "not inside") {
			t.Fatalf("%s: want a refusal, got %v", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.py")); !os.IsNotExist(err) {
		t.Fatalf("a file was written outside the directory: %v", err)
	}
	if err := writeTree("", files); err == nil {
		t.Fatal("no directory: want an error")
	}
}
