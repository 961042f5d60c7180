package main

import (
	"fmt"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// pythonOptions reads the runtime options of Pulumi.yaml, PulumiPolicy.yaml or
// PulumiPlugin.yaml (virtualenv, toolchain, typechecker). An option of the wrong type or an
// unknown value is an error naming the option, as upstream's host does; the virtualenv stays
// as written (relative to the project root): the toolchain package resolves it and names it
// that way in its messages.
//
// Plugins (not policy packs, not programs) with the pip toolchain and no virtualenv run in
// "venv": upstream refuses to run plugins in the ambient Python.
func pythonOptions(info *pulumirpc.ProgramInfo, isPlugin bool) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{
		Root:       info.GetRootDirectory(),
		ProgramDir: info.GetProgramDirectory(),
	}
	raw := info.GetOptions().AsMap()

	if v, ok := raw["virtualenv"]; ok {
		s, ok := v.(string)
		if !ok {
			return opts, fmt.Errorf("virtualenv option must be a string, got %v", v)
		}
		opts.Virtualenv = s
	}
	if v, ok := raw["typechecker"]; ok {
		s, ok := v.(string)
		if !ok {
			return opts, fmt.Errorf("typechecker option must be a string, got %v", v)
		}
		switch s {
		case "mypy":
			opts.Typechecker = toolchain.TypeCheckerMypy
		case "pyright":
			opts.Typechecker = toolchain.TypeCheckerPyright
		default:
			return opts, fmt.Errorf("unsupported typechecker option: %s (known: mypy, pyright)", s)
		}
	}
	if v, ok := raw["toolchain"]; ok {
		s, ok := v.(string)
		if !ok {
			return opts, fmt.Errorf("toolchain option must be a string, got %v", v)
		}
		switch s {
		case "pip":
			opts.Toolchain = toolchain.Pip
		case "poetry":
			opts.Toolchain = toolchain.Poetry
		case "uv":
			opts.Toolchain = toolchain.Uv
		default:
			return opts, fmt.Errorf("unsupported toolchain option: %s (known: pip, poetry, uv)", s)
		}
	}
	if isPlugin && opts.Virtualenv == "" &&
		(opts.Toolchain == toolchain.Pip || opts.Toolchain == toolchain.Auto) {
		opts.Virtualenv = "venv"
	}
	return opts, nil
}

// resolve parses the options and resolves the toolchain they name.
func resolve(info *pulumirpc.ProgramInfo, isPlugin bool) (toolchain.Toolchain, toolchain.PythonOptions, error) {
	opts, err := pythonOptions(info, isPlugin)
	if err != nil {
		return nil, opts, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	return tc, opts, err
}
