package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"google.golang.org/grpc"

	"github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

const analyzerKind = "analyzer"

// RunPlugin runs a Python policy pack (kind "analyzer") or another Python plugin (a tool or a
// provider: `pulumi plugin run`, local plugin directories with a PulumiPlugin.yaml).
//
// Policy packs run as `python -u -m pulumi.policy ARGS... PACK_DIR` in the pack's directory,
// behind the SDK's policy proxy: the engine's stack configuration (project, stack,
// organization, dry run, stack config) reaches the pack as the PULUMI_* environment that
// pulumi-policy reads at start, so `pulumi.Config()`, `pulumi.get_stack()` and
// `pulumi.runtime.is_dry_run()` work inside a pack as under upstream's host.
//
// Other plugins run their directory's __main__.py (`python DIR ARGS...`), or, without one, a
// buildable package through `python -m pulumi.run.plugin NAME ARGS...`.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, srv grpc.ServerStreamingServer[pulumirpc.RunPluginResponse]) error {
	ctx := srv.Context()
	isAnalyzer := req.GetKind() == analyzerKind
	tc, opts, err := resolve(req.GetInfo(), !isAnalyzer)
	if err != nil {
		return err
	}
	dir := req.GetInfo().GetProgramDirectory()

	var args []string
	var dbg *debugger
	if req.GetAttachDebugger() {
		if args, dbg, err = debugpyArgs(ctx, tc, opts); err != nil {
			return err
		}
		defer dbg.cleanup()
	}
	pluginArgs, err := pluginCommand(ctx, tc, opts, req)
	if err != nil {
		return err
	}
	cmd, err := tc.Command(ctx, append(args, pluginArgs...)...)
	if err != nil {
		return err
	}
	env := baseEnv(cmd)

	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(srv, false)
	if err != nil {
		return err
	}
	defer closer.Close()

	var proxy *sdk.PolicyProxy
	if isAnalyzer {
		// Packs always ran in their own directory (pulumi-analyzer-policy-python did so).
		cmd.Dir = dir
		// The proxy answers the engine first (its port goes out on stdout now), takes the
		// stack configuration, and only then is the pack started with it in its environment.
		if proxy, stdout, err = sdk.NewPolicyProxy(ctx, stdout); err != nil {
			return fmt.Errorf("could not start policy pack proxy: %w", err)
		}
		stack, err := proxy.AwaitConfiguration(ctx)
		if err != nil {
			return fmt.Errorf("could not get stack configuration: %w", err)
		}
		stackEnv, err := policyStackEnv(stack)
		if err != nil {
			return err
		}
		env = append(env, stackEnv...)
	} else {
		cmd.Dir = req.GetPwd()
	}
	cmd.Env = append(env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr

	if err := cmd.Start(); err != nil {
		if proxy != nil {
			proxy.Abort(err)
		}
		return fmt.Errorf("problem executing plugin program (could not run language executor): %w", err)
	}
	if dbg != nil {
		dctx, dcancel := context.WithCancel(ctx)
		defer dcancel()
		go h.announceDebugger(dctx, cmd, dbg, fmt.Sprintf("Pulumi: Plugin (%s)", req.GetName()))
	}
	if proxy != nil {
		err = proxy.Attach(ctx, cmd) // waits for the pack to exit
	} else {
		err = cmd.Wait()
	}
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
				return srv.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(ws.ExitStatus())},
				})
			}
			return fmt.Errorf("program exited unexpectedly: %w", exitErr)
		}
		if proxy != nil {
			return fmt.Errorf("could not attach policy pack proxy: %w", err)
		}
		return fmt.Errorf("problem executing plugin program (could not run language executor): %w", err)
	}
	return closer.Close()
}

// pluginCommand is the Python command line (after any debugger prefix) for the plugin.
func pluginCommand(ctx context.Context, tc toolchain.Toolchain, opts toolchain.PythonOptions,
	req *pulumirpc.RunPluginRequest,
) ([]string, error) {
	dir := req.GetInfo().GetProgramDirectory()
	if req.GetKind() == analyzerKind {
		args := []string{"-u", "-m", "pulumi.policy"}
		args = append(args, req.GetArgs()...)
		return append(args, dir), nil // the pack's directory comes last
	}
	if _, err := os.Stat(filepath.Join(opts.Root, "__main__.py")); err == nil {
		return append([]string{dir}, req.GetArgs()...), nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("looking for __main__.py: %w", err)
	}
	// No __main__.py: a buildable package run through pulumi.run.plugin, when the installed
	// SDK has it; an older SDK falls back to running the directory.
	check, err := tc.Command(ctx, "-c", "import pulumi.run.plugin")
	if err != nil {
		return nil, err
	}
	if out, err := check.CombinedOutput(); err != nil && strings.Contains(string(out), "ModuleNotFoundError") {
		return append([]string{dir}, req.GetArgs()...), nil
	}
	buildable, err := toolchain.IsBuildablePackage(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("checking if plugin is a buildable package: %w", err)
	}
	if !buildable {
		return nil, errors.New("plugin is not runnable, it provides neither __main__.py nor a buildable pyproject.toml")
	}
	pyproject, err := toolchain.LoadPyproject(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("loading pyproject: %w", err)
	}
	args := []string{"-m", "pulumi.run.plugin", pyproject.Project.Name}
	logging.V(5).Infof("RunPlugin: python %v", args)
	return append(args, req.GetArgs()...), nil
}

// policyStackEnv is what pulumi-policy reads to configure the Pulumi runtime inside a pack.
// Nil (the engine asked for something else first, e.g. `pulumi policy publish`) adds nothing.
func policyStackEnv(stack *pulumirpc.AnalyzerStackConfigureRequest) ([]string, error) {
	if stack == nil {
		return nil, nil
	}
	var env []string
	set := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	set("PULUMI_ORGANIZATION", stack.GetOrganization())
	set("PULUMI_PROJECT", stack.GetProject())
	set("PULUMI_STACK", stack.GetStack())
	set("PULUMI_DRY_RUN", strconv.FormatBool(stack.GetDryRun()))
	// As for programs: an empty stack config is {} (never null, never inherited).
	config := stack.GetConfig()
	if config == nil {
		config = map[string]string{}
	}
	c, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("could not marshal stack configuration: %w", err)
	}
	set("PULUMI_CONFIG", string(c))
	return env, nil
}
