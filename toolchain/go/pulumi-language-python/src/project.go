package main

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// Handshake records the engine's address: a host started by hand (PULUMI_DEBUG_LANGUAGES)
// learns it only here. Such a host serves several engine sessions, so it does not stop when
// one engine goes away (a host the engine started watches its engine from main).
func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.mu.Lock()
	h.engineAddr = req.GetEngineAddress()
	h.mu.Unlock()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version}, nil
}

// Cancel stops running programs (SIGINT, then a kill after a grace period).
func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancelRunning()
	return &emptypb.Empty{}, nil
}

// InstallDependencies is `pulumi install` (and `pulumi new`, and a plugin's first use): it
// (re)creates the virtualenv and installs requirements.txt (pip), or runs uv/poetry. A
// plugin that is a buildable package is installed into its own virtualenv too.
func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest, srv grpc.ServerStreamingServer[pulumirpc.InstallDependenciesResponse]) error {
	ctx := srv.Context()
	tc, _, err := resolve(req.GetInfo(), req.GetIsPlugin())
	if err != nil {
		return err
	}
	closer, stdout, stderr, err := rpcutil.MakeInstallDependenciesStreams(srv, req.GetIsTerminal())
	if err != nil {
		return err
	}
	defer closer.Close()

	dir := req.GetInfo().GetProgramDirectory()
	if dir == "" {
		dir = req.GetDirectory() //nolint:staticcheck // older engines fill only this
	}
	_, _ = stdout.Write([]byte("Installing dependencies...\n\n"))
	if req.GetIsPlugin() {
		buildable, err := toolchain.IsBuildablePackage(dir)
		if err != nil {
			return fmt.Errorf("checking if plugin is a buildable package: %w", err)
		}
		if buildable {
			if err := tc.InstallPackage(ctx, dir, req.GetUseLanguageVersionTools(), true, stdout, stderr); err != nil {
				return err
			}
		}
	}
	if err := tc.InstallDependencies(ctx, dir, req.GetUseLanguageVersionTools(), true, stdout, stderr); err != nil {
		return err
	}
	_, _ = stdout.Write([]byte("Finished installing dependencies\n\n"))
	return closer.Close()
}

// About is `pulumi about`'s language section: the Python executable and version, and the
// toolchain, its version and the typechecker. Without program info (old engines) it describes
// the ambient Python through pip, as upstream.
func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	opts := toolchain.PythonOptions{Toolchain: toolchain.Pip}
	if req.GetInfo() != nil {
		var err error
		if opts, err = pythonOptions(req.GetInfo(), false); err != nil {
			return nil, err
		}
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: info.PythonExecutable,
		Version:    info.PythonVersion.String(),
		Metadata: map[string]string{
			"toolchain":        toolchain.Name(opts.Toolchain),
			"toolchainVersion": info.ToolchainVersion.String(),
			"typechecker":      toolchain.TypeCheckerName(opts.Typechecker),
		},
	}, nil
}

// GetProgramDependencies lists the installed Python packages (`pulumi about`, update metadata).
func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest) (*pulumirpc.GetProgramDependenciesResponse, error) {
	tc, _, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	pkgs, err := tc.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, fmt.Errorf("failed to get python dependencies: %w", err)
	}
	resp := &pulumirpc.GetProgramDependenciesResponse{
		Dependencies: make([]*pulumirpc.DependencyInfo, 0, len(pkgs)),
	}
	for _, p := range pkgs {
		resp.Dependencies = append(resp.Dependencies, &pulumirpc.DependencyInfo{Name: p.Name, Version: p.Version})
	}
	return resp, nil
}

// RuntimeOptionsPrompts is what `pulumi new` asks about the runtime: the toolchain when the
// template names none (pip, or poetry/uv when on PATH), and for pip a virtualenv ("venv").
func (h *host) RuntimeOptionsPrompts(ctx context.Context, req *pulumirpc.RuntimeOptionsRequest) (*pulumirpc.RuntimeOptionsResponse, error) {
	raw := req.GetInfo().GetOptions().AsMap()
	var prompts []*pulumirpc.RuntimeOptionPrompt
	tc, hasToolchain := raw["toolchain"]
	if !hasToolchain {
		pip := &pulumirpc.RuntimeOptionPrompt_RuntimeOptionValue{
			PromptType: pulumirpc.RuntimeOptionPrompt_STRING, StringValue: "pip", DisplayName: "pip",
		}
		choices := append([]*pulumirpc.RuntimeOptionPrompt_RuntimeOptionValue{pip},
			plugin.MakeExecutablePromptChoices("poetry", "uv")...)
		prompts = append(prompts, &pulumirpc.RuntimeOptionPrompt{
			Key:         "toolchain",
			Description: "The toolchain to use for installing dependencies and running the program",
			PromptType:  pulumirpc.RuntimeOptionPrompt_STRING,
			Choices:     choices,
			Default:     pip,
		})
	}
	if _, hasVenv := raw["virtualenv"]; hasToolchain && tc == "pip" && !hasVenv {
		venv := &pulumirpc.RuntimeOptionPrompt_RuntimeOptionValue{
			PromptType: pulumirpc.RuntimeOptionPrompt_STRING, StringValue: "venv",
		}
		prompts = append(prompts, &pulumirpc.RuntimeOptionPrompt{
			Key:         "virtualenv",
			Description: "The virtualenv to use",
			PromptType:  pulumirpc.RuntimeOptionPrompt_STRING,
			Choices:     []*pulumirpc.RuntimeOptionPrompt_RuntimeOptionValue{venv},
			Default:     venv,
		})
	}
	return &pulumirpc.RuntimeOptionsResponse{Prompts: prompts}, nil
}

// Template prepares a project `pulumi new` just wrote for its toolchain (uv and poetry turn
// requirements.txt into pyproject.toml; pip needs nothing).
func (h *host) Template(ctx context.Context, req *pulumirpc.TemplateRequest) (*pulumirpc.TemplateResponse, error) {
	tc, _, err := resolve(req.GetInfo(), false)
	if err != nil {
		return nil, err
	}
	if err := tc.PrepareProject(ctx, req.GetProjectName(), req.GetInfo().GetProgramDirectory(), false, nil, nil); err != nil {
		return nil, err
	}
	return &pulumirpc.TemplateResponse{}, nil
}
