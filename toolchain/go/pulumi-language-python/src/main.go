// Command pulumi-language-python runs Python Pulumi programs, Python policy packs and Python
// plugins for the Pulumi engine. Upstream's host (module
// .../sdk/python/cmd/pulumi-language-python/v3) is not served by the Go module proxy this
// project may use, so gpu-queues builds this one from the pinned sdk/v3 module: its
// LanguageRuntime protocol, its python/toolchain package (virtualenv, pip/uv/poetry), its
// policy-pack proxy and the SDK's own executor script (pulumi-language-python-exec, installed
// beside this binary by toolchain/build.sh).
//
// It is written to behave as upstream's host does for everything a program, a policy pack or
// `pulumi preview/up/destroy/refresh/stack/config/about/install/new/plugin run` can observe
// (README.md beside src/ has the RPC-by-RPC comparison), and generates Python SDKs
// (GeneratePackage, with pkg/v3's codegen). GenerateProgram, GenerateProject, Link and Pack are
// not implemented (unsupported.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// version is set with -ldflags -X main.version=<pulumi version>.
var version = "dev"

const (
	executorName = "pulumi-language-python-exec"
	// engineHealthInterval is how often the host checks that the engine is still alive; when it
	// is gone (killed), the host stops instead of lingering as an orphan.
	engineHealthInterval = 5 * time.Minute
)

// host is the LanguageRuntime server. The RPCs it leaves unimplemented are in unsupported.go.
type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	executor     string // path of pulumi-language-python-exec
	tracing      string // -tracing endpoint, forwarded to the executor
	otelEndpoint string // PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT, forwarded to the executor

	mu         sync.Mutex
	engineAddr string // from the command line, or from Handshake when the host was started by hand

	// cancelled by the Cancel RPC: programs running then get SIGINT. Cancel replaces it, so a
	// host that serves several engine sessions (PULUMI_DEBUG_LANGUAGES) runs later programs.
	cancelCtx  context.Context
	cancelFunc context.CancelFunc
}

func main() {
	tracing := flag.String("tracing", "", "Emit tracing to a Zipkin-compatible tracing endpoint")
	showVersion := flag.Bool("version", false, "Print the plugin version and exit")
	useExecutor := flag.String("use-executor", "",
		"Run this executor script instead of the "+executorName+" beside the host")
	// Hosts built on an older SDK (pulumi-yaml's, loading a Python plugin) still pass the
	// runtime options as flags too; they come with every request's ProgramInfo, read there.
	for _, legacy := range []string{"toolchain", "virtualenv", "typechecker", "root"} {
		flag.String(legacy, "", "Ignored: the runtime option comes with each request (older engines pass it here too)")
	}
	flag.Parse()

	if *showVersion {
		fmt.Println(version)
		return
	}
	logging.InitLogging(false, 0, false)

	otelEndpoint := os.Getenv("PULUMI_OTEL_EXPORTER_OTLP_ENDPOINT")
	if otelEndpoint == "" {
		cmdutil.InitTracing("pulumi-language-python", "pulumi-language-python", *tracing)
	} else {
		if err := cmdutil.InitOtelTracing("pulumi-language-python", otelEndpoint); err != nil {
			logging.V(3).Infof("could not start OTel tracing: %v", err)
		}
		defer cmdutil.CloseOtelTracing()
	}

	executor := *useExecutor
	if executor == "" {
		var err error
		if executor, err = findExecutor(); err != nil {
			cmdutil.Exit(err)
		}
	}

	// The engine passes its address as the only positional argument. Without it (the host
	// started by hand for PULUMI_DEBUG_LANGUAGES), Handshake supplies it.
	engineAddr := ""
	if flag.NArg() > 0 {
		engineAddr = flag.Arg(0)
	}

	// Ctrl-C on the host, or the engine dying, stops the server.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if engineAddr != "" {
		if err := rpcutil.Healthcheck(ctx, engineAddr, engineHealthInterval, stop); err != nil {
			cmdutil.Exit(fmt.Errorf("could not start health check host RPC server: %w", err))
		}
	}
	cancel := make(chan bool)
	go func() { <-ctx.Done(); close(cancel) }()

	cancelCtx, cancelFunc := context.WithCancel(context.Background())
	h := &host{
		executor:     executor,
		tracing:      *tracing,
		otelEndpoint: otelEndpoint,
		engineAddr:   engineAddr,
		cancelCtx:    cancelCtx,
		cancelFunc:   cancelFunc,
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(s *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(s, h)
			return nil
		},
		Options: rpcutil.TracingServerInterceptorOptions(nil),
	})
	if err != nil {
		cmdutil.Exit(fmt.Errorf("could not start language host RPC server: %w", err))
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from the first line
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(fmt.Errorf("language host RPC stopped serving: %w", err))
	}
}

// findExecutor looks for the executor beside the invoked path first (toolchain/build.sh links
// both into .toolchain/bin), then beside the resolved executable.
func findExecutor() (string, error) {
	var dirs []string
	if p, err := exec.LookPath(os.Args[0]); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	if p, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		c := filepath.Join(d, executorName)
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", fmt.Errorf("missing executor: %s not found beside the language host (looked in %v)",
		executorName, dirs)
}

// runContext is the context a program runs under: done on Cancel.
func (h *host) runContext() context.Context {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cancelCtx
}

// cancelRunning interrupts the programs running now (not later ones).
func (h *host) cancelRunning() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancelFunc()
	h.cancelCtx, h.cancelFunc = context.WithCancel(context.Background())
}

func (h *host) engineAddress() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engineAddr
}
