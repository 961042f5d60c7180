package main

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// The RPCs below are left out on purpose: code generation (`pulumi convert`, `pulumi import
// --generate-code`, `pulumi package gen-sdk/add`, local SDKs of `packages:` in Pulumi.yaml)
// needs github.com/pulumi/pulumi/pkg/v3's codegen, and Pack (building an SDK wheel) serves only
// package publishing. None of them is needed to run a program or a policy pack. They answer
// Unimplemented (so the engine's own fallbacks still apply) with a message that says so.

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

func (h *host) GeneratePackage(context.Context, *pulumirpc.GeneratePackageRequest) (*pulumirpc.GeneratePackageResponse, error) {
	return nil, notBuiltIn("GeneratePackage", "Python SDK generation (pulumi package gen-sdk, pulumi package add)")
}

func (h *host) Link(context.Context, *pulumirpc.LinkRequest) (*pulumirpc.LinkResponse, error) {
	return nil, notBuiltIn("Link", "linking a generated SDK into the project (pulumi package add)")
}

func (h *host) Pack(context.Context, *pulumirpc.PackRequest) (*pulumirpc.PackResponse, error) {
	return nil, notBuiltIn("Pack", "building a Python SDK wheel (package publishing)")
}
