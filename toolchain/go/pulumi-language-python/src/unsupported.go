package main

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// The RPCs below are left out on purpose: program and project generation (`pulumi convert`,
// `pulumi import --generate-code`), Link (adding a generated SDK to a Python program's
// requirements, the last step of `pulumi package add` in a Python project) and Pack (building
// an SDK wheel, for package publishing). None of them is needed to run a program, a policy pack
// or a plugin, or to generate an SDK (GeneratePackage, codegen.go). They answer Unimplemented
// (so the engine's own fallbacks still apply) with a message that says so.

func notBuiltIn(rpc, use string) error {
	return status.Errorf(codes.Unimplemented,
		"%s is not implemented by gpu-queues' pulumi-language-python (toolchain/go/pulumi-language-python): "+
			"it runs programs, policy packs and plugins only; %s needs upstream's Python language host",
		rpc, use)
}

func (h *host) GenerateProgram(context.Context, *pulumirpc.GenerateProgramRequest) (*pulumirpc.GenerateProgramResponse, error) {
	return nil, notBuiltIn("GenerateProgram", "Python code generation (pulumi convert, pulumi import --generate-code)")
}

func (h *host) GenerateProject(context.Context, *pulumirpc.GenerateProjectRequest) (*pulumirpc.GenerateProjectResponse, error) {
	return nil, notBuiltIn("GenerateProject", "Python project generation (pulumi convert)")
}

func (h *host) Link(context.Context, *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	return nil, notBuiltIn("Link", "linking a generated SDK into the project (pulumi package add)")
}

func (h *host) Pack(context.Context, *pulumirpc.PackRequest) (*pulumirpc.PackResponse, error) {
	return nil, notBuiltIn("Pack", "building a Python SDK wheel (package publishing)")
}
