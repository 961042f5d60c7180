package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi-internal/netutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// firstDebugPort is where the search for a free debugpy port starts (upstream's choice, so
// editors configured for upstream find the program at the same place).
const firstDebugPort = 58791

// debuggerStartTimeout bounds the wait for debugpy to accept clients.
const debuggerStartTimeout = time.Minute

// debugger is a debugpy listener the program was started under (`--attach-debugger`).
type debugger struct {
	host   string
	port   int
	logDir string
}

func (d *debugger) cleanup() { _ = os.RemoveAll(d.logDir) }

// debugpyArgs is the Python command-line prefix that runs the executor under debugpy, waiting
// for a client. debugpy must be installed in the program's environment.
func debugpyArgs(ctx context.Context, tc toolchain.Toolchain, opts toolchain.PythonOptions) ([]string, *debugger, error) {
	if err := requirePackage(ctx, tc, opts, "debugpy"); err != nil {
		var missing *notInstalledError
		if errors.As(err, &missing) {
			return nil, nil, fmt.Errorf("debugpy is not installed. %s", missing.hint)
		}
		return nil, nil, err
	}
	logDir, err := os.MkdirTemp("", "pulumi-python-debugpy-")
	if err != nil {
		return nil, nil, fmt.Errorf("unable to allocate tmp dir: %w", err)
	}
	port, err := netutil.FindNextAvailablePort(firstDebugPort)
	if err != nil {
		_ = os.RemoveAll(logDir)
		return nil, nil, fmt.Errorf("unable to select a debug port: %w", err)
	}
	d := &debugger{host: "127.0.0.1", port: port, logDir: logDir}
	return []string{
		"-Xfrozen_modules=off", "-m", "debugpy",
		"--listen", fmt.Sprintf("%s:%d", d.host, d.port),
		"--wait-for-client", "--log-to", logDir,
	}, d, nil
}

// waitReady polls debugpy's server log of process pid until it accepts clients.
func (d *debugger) waitReady(ctx context.Context, pid int) error {
	logFile := filepath.Join(d.logDir, fmt.Sprintf("debugpy.server-%d.log", pid))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if f, err := os.Open(logFile); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "Adapter is accepting incoming client connections") {
					_ = f.Close()
					return nil
				}
			}
			_ = f.Close()
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// announceDebugger waits for debugpy, then tells the engine where to attach (the CLI shows it
// and editors pick it up). If that fails the program is killed: it would wait forever.
func (h *host) announceDebugger(ctx context.Context, cmd *exec.Cmd, d *debugger, name string) {
	ctx, cancel := context.WithTimeoutCause(ctx, debuggerStartTimeout, errors.New("debugger startup timed out"))
	defer cancel()
	err := func() error {
		if err := d.waitReady(ctx, cmd.Process.Pid); err != nil {
			return err
		}
		cfg, err := structpb.NewStruct(map[string]any{
			"name":       name,
			"type":       "python",
			"request":    "attach",
			"connect":    map[string]any{"host": d.host, "port": d.port},
			"justMyCode": true,
		})
		if err != nil {
			return fmt.Errorf("failed to serialize debug configuration: %w", err)
		}
		engine, closer, err := h.engineClient()
		if err != nil {
			return err
		}
		defer closer.Close()
		_, err = engine.StartDebugging(ctx, &pulumirpc.StartDebuggingRequest{
			Config:  cfg,
			Message: fmt.Sprintf("on port %d", d.port),
		})
		if err != nil {
			return fmt.Errorf("unable to start debugging: %w", err)
		}
		return nil
	}()
	if err != nil && !errors.Is(err, context.Canceled) {
		logging.Errorf("Unable to start debugging: %v", err)
		_ = cmd.Process.Kill()
	}
}
