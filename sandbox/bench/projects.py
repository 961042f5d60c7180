"""The three ways the scale benchmark applies the same objects: a generated gpu-queues stack in
the sandbox's shadow project (`OursStack`), the trivial program as a project of its own
(`TrivialStack`), and kubectl with the program's objects rendered under mocks."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml

from gpu_queues.tools import pulumi_cli
from sandbox import pulumi_stack as sandbox_stack
from sandbox.bench.generated import BENCH, TRIVIAL_PROGRAM, stack_file
from sandbox.bench.measure import Step, measure
from sandbox.bench.under_mocks import ours_under_mocks
from sandbox.paths import KUBECONFIG, KUBECTL, ROOT

RUN = ROOT / pulumi_cli.RUN


def pulumi_env() -> dict[str, str]:
    return sandbox_stack.environment()


class OursStack:
    """A generated gpu-queues stack in the sandbox's shadow project (sandbox.pulumi_stack)."""

    def __init__(self, name: str, raw: dict[str, Any]) -> None:
        self.name = name
        self.source = BENCH / f"Pulumi.{name}.yaml"
        self.source.parent.mkdir(parents=True, exist_ok=True)
        self.source.write_text(stack_file(raw))
        sandbox_stack.prepare(name, source=self.source)

    def run(self, *args: str) -> Step:
        return measure(
            pulumi_cli.argv(args, stack=self.name), cwd=sandbox_stack.SHADOW, env=pulumi_env()
        )

    def remove(self) -> None:
        pulumi_cli.run(
            ["stack", "rm", "--force", "--yes"],
            stack=self.name,
            cwd=sandbox_stack.SHADOW,
            env=pulumi_env(),
            check=False,
        )
        (sandbox_stack.SHADOW / f"Pulumi.{self.name}.yaml").unlink(missing_ok=True)


TRIVIAL_PROJECT = "bench-trivial"


class TrivialStack:
    """The trivial program as a Pulumi project of its own under .sandbox/bench/trivial."""

    def __init__(
        self,
        name: str,
        configmaps: int,
        namespace: str,
        *,
        settle: bool = True,
        render_dir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name, self.dir, self.env = name, BENCH / "trivial", env or pulumi_env()
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "Pulumi.yaml").write_text(
            yaml.safe_dump(
                {
                    "name": TRIVIAL_PROJECT,
                    "runtime": {
                        "name": "python",
                        "options": {"toolchain": "pip", "virtualenv": str(ROOT / ".venv")},
                    },
                }
            )
        )
        main = self.dir / "__main__.py"
        if not main.is_symlink():
            main.symlink_to(TRIVIAL_PROGRAM)
        config = {
            f"{TRIVIAL_PROJECT}:count": str(configmaps),
            f"{TRIVIAL_PROJECT}:namespace": namespace,
            f"{TRIVIAL_PROJECT}:settle": str(settle).lower(),
        }
        if render_dir is not None:
            config[f"{TRIVIAL_PROJECT}:renderDir"] = render_dir
        (self.dir / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
        pulumi_cli.run(["stack", "select", "--create", name], cwd=self.dir, env=self.env)

    def run(self, *args: str) -> Step:
        return measure(pulumi_cli.argv(args, stack=self.name), cwd=self.dir, env=self.env)

    def remove(self) -> None:
        pulumi_cli.run(
            ["stack", "rm", "--force", "--yes"],
            stack=self.name,
            cwd=self.dir,
            env=self.env,
            check=False,
        )
        (self.dir / f"Pulumi.{self.name}.yaml").unlink(missing_ok=True)


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def rendered_manifest(raw: dict[str, Any]) -> str:
    """The program's objects for config `raw` (under mocks, in registration order) as YAML."""
    objects = [_drop_none(o) for o in ours_under_mocks(raw)]
    return yaml.safe_dump_all(objects, sort_keys=False)


def kubectl_argv(*args: str) -> list[str]:
    return [str(KUBECTL), "--kubeconfig", str(KUBECONFIG), *args]


def delete_objects(manifest: Path) -> None:
    """Remove what a run created (namespaces go last, asynchronously)."""
    subprocess.run(
        kubectl_argv("delete", "-f", str(manifest), "--ignore-not-found", "--wait=false"),
        capture_output=True,
        check=False,
    )
