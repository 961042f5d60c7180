// Command pulumi-language-python runs Python Pulumi programs and Python policy packs
// for the Pulumi engine. Upstream's host (module .../sdk/python/cmd/pulumi-language-python/v3)
// is not served by the Go module proxy this project may use, so gpu-queues builds this
// one from the pinned sdk/v3 module: its LanguageRuntime protocol, its python/toolchain
// package (virtualenv resolution, dependency install) and the SDK's own executor script
// (pulumi-language-python-exec, installed beside this binary by toolchain/build.sh).
// It implements what `pulumi preview/up/refresh/destroy` and `--policy-pack` need;
// code generation and templates are left unimplemented on purpose.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pbempty "google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// version is set with -ldflags -X main.version=<pulumi version>.
var version = "dev"

// bailExitCode is what the executor exits with after it has shown the user an error.
const bailExitCode = 32

// pluginListScript prints, as JSON, the resource plugins the installed Python packages
// declare in their pulumi-plugin.json (how pulumi-kubernetes names its provider version).
const pluginListScript = `
import importlib.metadata as md, json, sys
out = []
for dist in md.distributions():
    for f in dist.files or []:
        if f.name == "pulumi-plugin.json":
            try:
                meta = json.loads(f.read_text())
            except Exception:
                continue
            if meta.get("resource"):
                out.append({"name": meta.get("name") or dist.metadata["Name"],
                            "version": meta.get("version") or dist.version,
                            "server": meta.get("server", "")})
json.dump(out, sys.stdout)
`

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	execScript string
}

func main() {
	// The engine passes its own address as the last argument; flags before it are ignored.
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pulumi-language-python [flags] ENGINE_ADDRESS")
		os.Exit(2)
	}
	if os.Args[1] == "--version" || os.Args[1] == "-version" {
		fmt.Println(version)
		return
	}
	script, err := findExecScript()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h := &host{execScript: script}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
		Options: rpcutil.OpenTracingServerInterceptorOptions(nil),
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "could not start language host RPC server: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from the first line
	if err := <-handle.Done; err != nil {
		fmt.Fprintf(os.Stderr, "language host RPC server stopped: %v\n", err)
		os.Exit(1)
	}
}

// findExecScript looks beside the invoked path first (a symlink in .toolchain/bin),
// then beside the resolved executable.
func findExecScript() (string, error) {
	const name = "pulumi-language-python-exec"
	dirs := []string{}
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	if p, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		if c := filepath.Join(d, name); fileExists(c) {
			return c, nil
		}
	}
	return "", fmt.Errorf("missing executor: %s not found beside the language host (looked in %v)", name, dirs)
}

func fileExists(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }

// toolchainFor resolves the Python toolchain (virtualenv, pip/uv/poetry) from the
// runtime options of Pulumi.yaml or PulumiPolicy.yaml.
func toolchainFor(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
	opts := toolchain.PythonOptions{Toolchain: toolchain.Auto}
	if info != nil {
		opts.Root = info.GetRootDirectory()
		opts.ProgramDir = info.GetProgramDirectory()
		o := info.GetOptions().AsMap()
		if v, ok := o["virtualenv"].(string); ok {
			opts.Virtualenv = v
		}
		switch o["toolchain"] {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "uv":
			opts.Toolchain = toolchain.Uv
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		}
	}
	if opts.Virtualenv != "" && !filepath.IsAbs(opts.Virtualenv) && opts.Root != "" {
		opts.Virtualenv = filepath.Join(opts.Root, opts.Virtualenv)
	}
	return toolchain.ResolveToolchain(opts)
}

func (h *host) Handshake(context.Context, *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *pbempty.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: strings.TrimPrefix(version, "v")}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context, req *pulumirpc.GetRequiredPluginsRequest) (*pulumirpc.GetRequiredPluginsResponse, error) {
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	cmd, err := tc.Command(ctx, "-c", pluginListScript)
	if err != nil {
		return nil, err
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing Python packages' plugins: %w", withStderr(err))
	}
	var found []struct{ Name, Version, Server string }
	if err := json.Unmarshal(out, &found); err != nil {
		return nil, fmt.Errorf("listing Python packages' plugins: %w", err)
	}
	resp := &pulumirpc.GetRequiredPluginsResponse{}
	for _, p := range found {
		v := p.Version
		if v != "" && !strings.HasPrefix(v, "v") {
			v = "v" + v
		}
		resp.Plugins = append(resp.Plugins, &pulumirpc.PluginDependency{Name: p.Name, Kind: "resource", Version: v, Server: p.Server})
	}
	return resp, nil
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	args := []string{"-u", h.execScript,
		"--monitor", req.GetMonitorAddress(),
		"--engine", engineAddress(),
		"--project", req.GetProject(),
		"--stack", req.GetStack(),
		"--pwd", req.GetPwd(),
		"--dry_run=" + strconv.FormatBool(req.GetDryRun()),
		"--parallel", strconv.Itoa(int(req.GetParallel())),
	}
	if req.GetOrganization() != "" {
		args = append(args, "--organization", req.GetOrganization())
	}
	if root := req.GetInfo().GetRootDirectory(); root != "" {
		args = append(args, "--root_directory", root)
	}
	program := req.GetProgram()
	if program == "" {
		program = "."
	}
	args = append(args, program)
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	cfg, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(nonNil(req.GetConfigSecretKeys()))
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Environ(), "PULUMI_CONFIG="+string(cfg), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if exitErr.ExitCode() == bailExitCode {
				return &pulumirpc.RunResponse{Bail: true}, nil
			}
			return &pulumirpc.RunResponse{Error: fmt.Sprintf("Program exited with non-zero exit code: %d", exitErr.ExitCode())}, nil
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("Problem executing program (could not run language executor): %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a Python policy pack (kind "analyzer") with `python -m pulumi.policy`.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, srv grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]) error {
	if req.GetKind() != "analyzer" {
		return status.Errorf(codes.Unimplemented, "plugins of kind %q are not supported by this language host", req.GetKind())
	}
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return err
	}
	args := append([]string{}, req.GetArgs()...)
	args = append(args, req.GetInfo().GetProgramDirectory())
	cmd, err := tc.ModuleCommand(srv.Context(), "pulumi.policy", args...)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Environ(), req.GetEnv()...)
	cmd.Dir = req.GetPwd()
	if cmd.Dir == "" {
		cmd.Dir = req.GetInfo().GetProgramDirectory()
	}
	var mu sync.Mutex
	send := func(r *pulumirpc.RunPluginResponse) error { mu.Lock(); defer mu.Unlock(); return srv.Send(r) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var wg sync.WaitGroup
	pump := func(r io.Reader, wrap func([]byte) *pulumirpc.RunPluginResponse) {
		defer wg.Done()
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				_ = send(wrap(line))
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(2)
	go pump(stdout, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: b}}
	})
	go pump(stderr, func(b []byte) *pulumirpc.RunPluginResponse {
		return &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: b}}
	})
	wg.Wait()
	code := 0
	if err := cmd.Wait(); err != nil {
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) {
			return err
		}
		code = exitErr.ExitCode()
	}
	return send(&pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(code)}})
}

// InstallDependencies creates the virtualenv if needed and installs requirements.txt into it.
func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest, srv grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse]) error {
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return err
	}
	out := streamWriter(func(b []byte) error { return srv.Send(&pulumirpc.InstallDependenciesResponse{Stdout: b}) })
	errw := streamWriter(func(b []byte) error { return srv.Send(&pulumirpc.InstallDependenciesResponse{Stderr: b}) })
	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetDirectory()
	}
	if err := tc.EnsureVenv(srv.Context(), dir, false, true, out, errw); err != nil {
		return err
	}
	return tc.InstallDependencies(srv.Context(), dir, false, true, out, errw)
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{Executable: info.PythonExecutable, Version: info.PythonVersion.String()}, nil
}

func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, err := toolchainFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{}
	for _, p := range pkgs {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return resp, nil
}

type streamWriter func([]byte) error

func (w streamWriter) Write(b []byte) (int, error) {
	if err := w(append([]byte(nil), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}

func engineAddress() string { return os.Args[len(os.Args)-1] }

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func withStderr(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(exitErr.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exitErr.Stderr)))
	}
	return err
}
