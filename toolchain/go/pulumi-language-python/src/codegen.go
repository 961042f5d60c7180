package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/pulumi/pulumi/pkg/v3/codegen/python"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// GeneratePackage writes a Python SDK for a package schema (`pulumi package gen-sdk --language
// python`, and the SDK `pulumi package add` makes for a Python program) with the pinned
// pkg/v3's Python code generator. The schema is bound against the engine's schema loader, so
// packages it refers to are resolved as the CLI resolves them; a schema that does not bind
// comes back as the binder's diagnostics, and nothing is written.
func (h *host) GeneratePackage(ctx context.Context, req *pulumirpc.GeneratePackageRequest) (*pulumirpc.GeneratePackageResponse, error) {
	if req.GetLoaderTarget() == "" {
		return nil, fmt.Errorf("GeneratePackage: the engine gave no schema loader")
	}
	client, err := schema.NewLoaderClient(req.GetLoaderTarget())
	if err != nil {
		return nil, fmt.Errorf("GeneratePackage: connecting to the engine's schema loader: %w", err)
	}
	defer client.Close()
	loader := schema.NewCachedLoader(client)

	var spec schema.PackageSpec
	if err := json.Unmarshal([]byte(req.GetSchema()), &spec); err != nil {
		return nil, fmt.Errorf("GeneratePackage: the package schema is not valid JSON: %w", err)
	}
	pkg, diags, err := schema.BindSpec(spec, loader, schema.ValidationOptions{})
	if err != nil {
		return nil, fmt.Errorf("GeneratePackage: binding the schema of %q: %w", spec.Name, err)
	}
	if diags.HasErrors() {
		return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
	}
	files, err := python.GeneratePackage("pulumi-language-python", pkg, req.GetExtraFiles(), loader)
	if err != nil {
		return nil, fmt.Errorf("GeneratePackage: generating the Python SDK of %q: %w", spec.Name, err)
	}
	if err := writeTree(req.GetDirectory(), files); err != nil {
		return nil, fmt.Errorf("GeneratePackage: %w", err)
	}
	return &pulumirpc.GeneratePackageResponse{Diagnostics: plugin.HclDiagnosticsToRPCDiagnostics(diags)}, nil
}

// writeTree writes files (paths relative to dir, slash-separated) under dir, in a sorted order,
// and refuses a path that would leave dir.
func writeTree(dir string, files map[string][]byte) error {
	if dir == "" {
		return fmt.Errorf("no directory to write the SDK to")
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		rel := filepath.FromSlash(name)
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("generated file %q is not inside %s", name, dir)
		}
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, files[name], 0o600); err != nil {
			return err
		}
	}
	return nil
}
