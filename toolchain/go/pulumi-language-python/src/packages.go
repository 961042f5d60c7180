package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// pluginlessPackages are pulumi-* distributions known to have no resource plugin.
var pluginlessPackages = map[string]bool{"pulumi-policy": true, "pulumi-esc-sdk": true}

// installedScript prints, as JSON, every distribution installed in the environment with its
// PEP 503 name, its version, and the path of the pulumi-plugin.json inside its import package
// ("" if none). One Python run instead of `pip list` plus a second one: it is on the path of
// every preview and update. Entries on sys.path first win, as for imports (and pip list).
const installedScript = `
import importlib.metadata as md, importlib.util as iu, json, os, re
seen, out = set(), []
for dist in md.distributions():
    name = dist.metadata["Name"]
    if not name:
        continue
    norm = re.sub(r"[-_.]+", "-", name).lower()
    if norm in seen:
        continue
    seen.add(norm)
    plugin_json = ""
    try:
        spec = iu.find_spec(name.replace("-", "_"))
        for loc in (spec.submodule_search_locations or []) if spec else []:
            candidate = os.path.join(str(loc), "pulumi-plugin.json")
            if os.path.isfile(candidate):
                plugin_json = candidate
                break
    except Exception:
        pass
    out.append({"name": norm, "version": dist.version, "plugin_json": plugin_json})
print(json.dumps(out))
`

// GetRequiredPackages lists the resource plugins the program's installed Python packages need:
// every package with a pulumi-plugin.json saying resource: true, and pulumi-* packages without
// one (plugin version derived from the package version). A missing virtualenv is created
// first (and its requirements installed), as upstream does on a fresh checkout.
func (h *host) GetRequiredPackages(ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest) (*pulumirpc.GetRequiredPackagesResponse, error) {
	tc, _, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	stdout, stderr, closeLog := h.engineWriters(ctx)
	defer closeLog()
	if err := tc.EnsureVenv(ctx, req.GetInfo().GetProgramDirectory(), false, true, stdout, stderr); err != nil {
		return nil, err
	}
	// A virtualenv option naming a folder that holds no Python (EnsureVenv leaves a non-empty
	// folder alone) is reported with the commands that fix it, not as a failed `pip list`.
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	pkgs, err := requiredPackages(ctx, tc)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: pkgs}, nil
}

// GetRequiredPlugins is the older form of GetRequiredPackages (no parameterization); the
// engine only calls it when GetRequiredPackages is unimplemented, but answering it honestly
// costs nothing.
func (h *host) GetRequiredPlugins(ctx context.Context, req *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	tc, _, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	pkgs, err := requiredPackages(ctx, tc)
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetRequiredPluginsResponse{}
	for _, p := range pkgs {
		if p.GetParameterization() != nil {
			continue // not expressible as a plain plugin
		}
		resp.Plugins = append(resp.Plugins, &pulumirpc.PluginDependency{
			Name: p.GetName(), Kind: p.GetKind(), Version: p.GetVersion(), Server: p.GetServer(),
		})
	}
	return resp, nil
}

type installedPackage struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	PluginJSON string `json:"plugin_json"`
}

func requiredPackages(ctx context.Context, tc toolchain.Toolchain) ([]*pulumirpc.PackageDependency, error) {
	cmd, err := tc.Command(ctx, "-c", installedScript)
	if err != nil {
		return nil, err
	}
	raw, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the installed Python packages with %s: %w", cmd.Path, withStderr(err))
	}
	var installed []installedPackage
	if err := json.Unmarshal(raw, &installed); err != nil {
		return nil, fmt.Errorf("listing the installed Python packages: %w", err)
	}
	out := []*pulumirpc.PackageDependency{}
	for _, p := range installed {
		if pluginlessPackages[p.Name] {
			continue
		}
		var meta *plugin.PulumiPluginJSON
		if p.PluginJSON != "" {
			data, err := os.ReadFile(p.PluginJSON)
			if err != nil {
				logging.V(5).Infof("could not read %s: %v", p.PluginJSON, err)
			} else {
				meta = &plugin.PulumiPluginJSON{}
				if err := json.Unmarshal(data, meta); err != nil {
					return nil, fmt.Errorf("failed to parse pulumi-plugin.json for %s: %w", p.Name, err)
				}
			}
		}
		if meta == nil && !strings.HasPrefix(p.Name, "pulumi-") {
			continue // not a Pulumi package
		}
		if dep := packageDependency(plugin.DependencyInfo{Name: p.Name, Version: p.Version}, meta); dep != nil {
			out = append(out, dep)
		}
	}
	return out, nil
}

// withStderr adds a failed command's stderr to its error.
func withStderr(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exitErr.Stderr)))
	}
	return err
}

// packageDependency is the plugin a package needs, or nil: resource: false in its
// pulumi-plugin.json, or a version that has no plugin equivalent.
func packageDependency(pkg plugin.DependencyInfo, meta *plugin.PulumiPluginJSON) *pulumirpc.PackageDependency {
	dep := &pulumirpc.PackageDependency{Kind: "resource"}
	if meta != nil {
		if !meta.Resource {
			return nil
		}
		dep.Name, dep.Version, dep.Server = meta.Name, meta.Version, meta.Server
		dep.Parameterization = parameterization(meta.Parameterization)
		dep.Extension = parameterization(meta.ExtensionParameterization)
	}
	if dep.Name == "" {
		dep.Name = strings.TrimPrefix(pkg.Name, "pulumi-")
	}
	if dep.Version == "" {
		v, err := pluginVersion(pkg.Version)
		if err != nil {
			logging.V(5).Infof("no plugin version for %s %s: %v", pkg.Name, pkg.Version, err)
			return nil
		}
		dep.Version = v
	}
	if !strings.HasPrefix(dep.Version, "v") {
		dep.Version = "v" + dep.Version
	}
	return dep
}

func parameterization(p *plugin.PulumiParameterizationJSON) *pulumirpc.PackageParameterization {
	if p == nil {
		return nil
	}
	return &pulumirpc.PackageParameterization{Name: p.Name, Version: p.Version, Value: p.Value}
}

// pluginVersion turns a PEP 440 package version into the plugin's semver, for the subset
// N(.N)*[{a|b|rc}N][.postN][.devN]: at least three release numbers (missing ones are 0),
// a/b/rc become -alpha./-beta./-rc., .postN and .devN become build metadata (+postN, +devN,
// +postNdevM). Epochs, local versions and anything else are refused.
func pluginVersion(v string) (string, error) {
	if v == "" {
		return "", errors.New("cannot parse empty string")
	}
	for i := 0; i < len(v); i++ {
		if v[i] > 0x7f {
			return "", fmt.Errorf("byte %d is not ascii", i)
		}
	}
	digits := func(s string) (string, string) {
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return s[:i], s[i:]
	}
	if n, rest := digits(v); n != "" && strings.HasPrefix(rest, "!") {
		return "", errors.New("epochs are not supported")
	}

	var release []string
	rest := v
	for {
		n, after := digits(rest)
		if n == "" {
			break
		}
		release = append(release, n)
		rest = after
		// A dot continues the release only when a number follows; ".post"/".dev" do not.
		if len(rest) > 1 && rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' {
			rest = rest[1:]
			continue
		}
		break
	}
	if len(release) == 0 {
		return "", fmt.Errorf("'%s' does not start with a release number", v)
	}
	for len(release) < 3 {
		release = append(release, "0")
	}

	pre := ""
	for _, p := range []struct{ pep, semver string }{{"rc", "-rc."}, {"a", "-alpha."}, {"b", "-beta."}} {
		if strings.HasPrefix(rest, p.pep) {
			var n string
			n, rest = digits(rest[len(p.pep):])
			pre = p.semver + n
			break
		}
	}
	build := ""
	if strings.HasPrefix(rest, ".post") {
		var n string
		n, rest = digits(rest[len(".post"):])
		build = "+post" + n
	}
	if strings.HasPrefix(rest, ".dev") {
		var n string
		n, rest = digits(rest[len(".dev"):])
		if build == "" {
			build = "+"
		}
		build += "dev" + n
	}
	if rest != "" {
		return "", fmt.Errorf("'%s' still unparsed", rest)
	}
	return strings.Join(release, ".") + pre + build, nil
}

// engineWriters send what they are given to the engine as ephemeral log messages (info and
// error), so that virtualenv creation shows in the CLI's progress display. Without an engine
// connection the output goes to our stderr, which the engine also shows.
func (h *host) engineWriters(ctx context.Context) (io.Writer, io.Writer, func()) {
	engine, conn, err := h.engineClient()
	if err != nil {
		return os.Stderr, os.Stderr, func() {}
	}
	stream := rand.Int31() //nolint:gosec // a stream id, not a secret
	return &engineLog{ctx, engine, stream, pulumirpc.LogSeverity_INFO},
		&engineLog{ctx, engine, stream, pulumirpc.LogSeverity_ERROR},
		func() { _ = conn.Close() }
}

type engineLog struct {
	ctx      context.Context
	engine   pulumirpc.EngineClient
	stream   int32
	severity pulumirpc.LogSeverity
}

func (w *engineLog) Write(p []byte) (int, error) {
	_, err := w.engine.Log(w.ctx, &pulumirpc.LogRequest{
		Message:   strings.ToValidUTF8(string(p), "\uFFFD"),
		Ephemeral: true,
		StreamId:  w.stream,
		Severity:  w.severity,
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}
