package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// bailExitCode is what the executor exits with after it has shown the user an error itself
// (an unhandled exception, a RunError, a missing __main__.py): the engine then adds nothing.
const bailExitCode = 32

// interruptGrace is how long a program gets to stop after SIGINT (Cancel, or the engine
// going away) before it is killed.
const interruptGrace = 5 * time.Second

// Run runs the program through the SDK's executor script.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	tc, opts, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	// A missing virtualenv is named with the commands that create it, before anything runs.
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}

	var args []string
	var dbg *debugger
	if req.GetAttachDebugger() {
		if args, dbg, err = debugpyArgs(ctx, tc, opts); err != nil {
			return &pulumirpc.RunResponse{Error: err.Error()}, nil
		}
		defer dbg.cleanup()
	}
	args = append(args, h.executor)
	args = append(args, executorArgs(req, h.engineAddress(), h.tracing)...)

	env, err := configEnv(req.GetConfig(), req.GetConfigSecretKeys())
	if err != nil {
		return nil, err
	}

	if err := typecheck(ctx, tc, opts); err != nil {
		return nil, err
	}

	// The program stops on the Cancel RPC or when the engine abandons this request.
	runCtx, cancel := context.WithCancel(h.runContext())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()

	cmd, err := tc.Command(runCtx, args...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error {
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			return cmd.Process.Kill()
		}
		return nil
	}
	cmd.WaitDelay = interruptGrace
	cmd.Dir = req.GetPwd()
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr

	ctx, span := cmdutil.StartSpan(ctx, otel.Tracer("pulumi-language-python"), "execPython",
		trace.WithAttributes(attribute.String("component", "exec.Command"), attribute.StringSlice("args", args)))
	defer span.End()
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if tp := carrier.Get("traceparent"); tp != "" {
		env = append(env, "TRACEPARENT="+tp)
	}
	if h.otelEndpoint != "" {
		env = append(env, "PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT="+h.otelEndpoint)
	}
	cmd.Env = append(baseEnv(cmd), env...)

	logging.V(5).Infof("language host running %v", cmd.Args)
	if err := cmd.Start(); err != nil {
		return &pulumirpc.RunResponse{Error: fmt.Sprintf(
			"problem executing program (could not run language executor): %v", err)}, nil
	}
	if dbg != nil {
		dctx, dcancel := context.WithCancel(ctx) // ends the announcement when the program exits
		defer dcancel()
		go h.announceDebugger(dctx, cmd, dbg, "Pulumi: Program (Python)")
	}
	err = cmd.Wait()
	if err == nil {
		return &pulumirpc.RunResponse{}, nil
	}
	// Python does not flush on an abnormal exit; make sure the engine has everything the
	// program wrote before it reads the error.
	_ = os.Stdout.Sync()
	_ = os.Stderr.Sync()
	msg, bail := exitMessage(err)
	return &pulumirpc.RunResponse{Error: msg, Bail: bail}, nil
}

// executorArgs is the executor's command line: flags only when they have a value (as
// upstream), then the entry point ("." for a directory, or a file) and the program's arguments.
func executorArgs(req *pulumirpc.RunRequest, engineAddr, tracing string) []string {
	var args []string
	flag := func(k, v string) {
		if v != "" {
			args = append(args, "--"+k, v)
		}
	}
	flag("monitor", req.GetMonitorAddress())
	flag("engine", engineAddr)
	flag("project", req.GetProject())
	flag("root_directory", req.GetInfo().GetRootDirectory())
	flag("stack", req.GetStack())
	flag("pwd", req.GetPwd())
	flag("dry_run", strconv.FormatBool(req.GetDryRun()))
	flag("parallel", strconv.Itoa(int(req.GetParallel())))
	flag("tracing", tracing)
	flag("organization", req.GetOrganization())

	entry := req.GetInfo().GetEntryPoint()
	if entry == "" {
		entry = req.GetProgram() //nolint:staticcheck // older engines fill only this
	}
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	return append(args, req.GetArgs()...)
}

// configEnv is PULUMI_CONFIG and PULUMI_CONFIG_SECRET_KEYS for the executor. A stack with no
// config arrives as a nil map (protobuf does not tell empty from absent); it must reach the
// SDK as an empty object, never as JSON null (set_all_config iterates it), and always be set
// so that no PULUMI_CONFIG inherited from the environment stands in for the stack's.
func configEnv(config map[string]string, secretKeys []string) ([]string, error) {
	if config == nil {
		config = map[string]string{}
	}
	if secretKeys == nil {
		secretKeys = []string{}
	}
	c, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("failed to serialize configuration: %w", err)
	}
	k, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("failed to serialize configuration secret keys: %w", err)
	}
	return []string{"PULUMI_CONFIG=" + string(c), "PULUMI_CONFIG_SECRET_KEYS=" + string(k)}, nil
}

// exitMessage turns the executor's exit into the engine's error text; bail is true for exit
// code 32 (the program already showed its error).
func exitMessage(err error) (string, bool) {
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		return fmt.Sprintf("problem executing program (could not run language executor): %v", err), false
	}
	ws, ok := exitErr.Sys().(syscall.WaitStatus)
	switch {
	case !ok:
		return fmt.Sprintf("program exited unexpectedly: %v", exitErr), false
	case ws.Signaled():
		return fmt.Sprintf("program exited with non-zero exit code: -1 (terminated by signal %d: %v)",
			int(ws.Signal()), ws.Signal()), false
	case ws.ExitStatus() == 0:
		return fmt.Sprintf("program exited unexpectedly: %v", exitErr), false
	case ws.ExitStatus() == bailExitCode:
		return "", true
	default:
		return fmt.Sprintf("program exited with non-zero exit code: %d", ws.ExitStatus()), false
	}
}

// baseEnv is the environment the toolchain prepared (the activated virtualenv), or ours.
func baseEnv(cmd *exec.Cmd) []string {
	if cmd.Env != nil {
		return cmd.Env
	}
	return os.Environ()
}

// typecheck runs the typechecker option (mypy or pyright) over the program directory before
// the program, as upstream does; a failure stops the run with the checker's output.
func typecheck(ctx context.Context, tc toolchain.Toolchain, opts toolchain.PythonOptions) error {
	var name string
	switch opts.Typechecker {
	case toolchain.TypeCheckerMypy:
		name = "mypy"
	case toolchain.TypeCheckerPyright:
		name = "pyright"
	default:
		return nil
	}
	if err := requirePackage(ctx, tc, opts, name); err != nil {
		return fmt.Errorf("The typechecker option is set to %s, but %s is not installed. %w", name, name, err) //nolint:staticcheck,revive // user-facing sentence
	}
	args := []string{"-m", name}
	if name == "mypy" {
		// The virtualenv may live inside the program directory; mypy must not check it.
		venv, err := tc.VirtualEnvPath(ctx)
		if err != nil {
			return err
		}
		if venv != "" {
			rel, err := filepath.Rel(opts.ProgramDir, venv)
			if err != nil {
				return err
			}
			args = append(args, "--exclude", rel)
		}
	}
	args = append(args, opts.ProgramDir)
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	cmd.Dir = opts.ProgramDir
	cmd.Stdout = io.MultiWriter(os.Stdout, &out)
	cmd.Stderr = io.MultiWriter(os.Stderr, &out)
	if err := cmd.Run(); err != nil {
		if out.Len() > 0 {
			return fmt.Errorf("%s failed: %w\n%s", name, err, out.String())
		}
		return fmt.Errorf("%s failed: %w", name, err)
	}
	return nil
}

// notInstalledError says how to install a missing package with the project's toolchain.
type notInstalledError struct{ hint string }

func (e *notInstalledError) Error() string { return e.hint }

// requirePackage fails with install instructions when pkg is not installed in the toolchain.
func requirePackage(ctx context.Context, tc toolchain.Toolchain, opts toolchain.PythonOptions, pkg string) error {
	pkgs, err := tc.ListPackages(ctx, true)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(pkgs, func(p plugin.DependencyInfo) bool { return p.Name == pkg }) {
		return nil
	}
	if opts.Toolchain == toolchain.Poetry {
		return &notInstalledError{fmt.Sprintf("Please install it using `poetry add %s`.", pkg)}
	}
	return &notInstalledError{fmt.Sprintf(
		"Please add an entry for %s to requirements.txt and run `%s/bin/pip install -r requirements.txt`",
		pkg, opts.Virtualenv)}
}

// engineClient dials the engine (for logs and debugger announcements).
func (h *host) engineClient() (pulumirpc.EngineClient, io.Closer, error) {
	addr := h.engineAddress()
	if addr == "" {
		return nil, nil, errors.New("no engine address: the engine must call Handshake before this request")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		rpcutil.GrpcChannelOptions())
	if err != nil {
		return nil, nil, fmt.Errorf("language host could not make connection to engine: %w", err)
	}
	return pulumirpc.NewEngineClient(conn), conn, nil
}
