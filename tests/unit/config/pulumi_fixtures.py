"""Stack files as the real Pulumi CLI writes them, for the tools' tests
(tests/unit/config/data/cli/).

    PATH=.toolchain/bin:$PATH .venv/bin/python -m tests.unit.config.pulumi_fixtures --write

runs the CLI in a scratch project (the committed stack files copied in, a file backend and a
passphrase of its own) and saves what `pulumi stack select --create` and `pulumi config set
--secret [--path]` leave in each file. The ciphertexts and salts are random per run
(`masked()` replaces them, to compare two captures by eye); no test compares a fresh capture
with the saved one byte for byte: the toolchain test checks a fresh capture has the shapes
the unit tests rely on (tests/unit/config/test_stackfile_cli.py), the unit test the saved files.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parent / "data" / "cli"
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- cluster: {server: 'https://127.0.0.1:6443'}
  name: c
contexts:
- context: {cluster: c, user: u}
  name: c
current-context: c
users:
- name: u
  user: {token: not-a-real-token}
"""

# (fixture name, committed stack it starts from or None, pulumi config commands: args, stdin)
Steps = Sequence[tuple[Sequence[str], str | None]]
KUBECONFIG_STEP = (
    ["config", "set", "--secret", "--path", "gpu-queues:kubernetes.kubeconfig"],
    KUBECONFIG,
)
SCENARIOS: dict[str, tuple[str | None, Steps]] = {
    # The README's step on a committed stack: stack init adds the salt, --path nests the secret.
    "staging-kubeconfig": (
        "staging",
        [KUBECONFIG_STEP],
    ),
    "dev-kubeconfig": (
        "dev",
        [KUBECONFIG_STEP],
    ),
    # Secrets Pulumi allows anywhere: in a list item, on a quota, in the kueue block, in
    # other namespaces, and a dotted key set without --path.
    "secrets-everywhere": (
        "staging",
        [
            KUBECONFIG_STEP,
            (
                [
                    "config",
                    "set",
                    "--secret",
                    "--path",
                    "gpu-queues:teams[0].submitters[0].name",
                    "x",
                ],
                None,
            ),
            (["config", "set", "--secret", "kubernetes:kubeconfig", "provider-level"], None),
            (["config", "set", "--secret", "other-project:token", "t0k3n"], None),
        ],
    ),
    "secret-quota": (
        "staging",
        [
            (
                [
                    "config",
                    "set",
                    "--secret",
                    "--path",
                    'gpu-queues:teams[1].resourceGroups[0].flavors[0].resources["nvidia.com/gpu"]'
                    ".nominalQuota",
                    "2",
                ],
                None,
            ),
        ],
    ),
    "secret-in-kueue-block": (
        "staging",
        [
            (
                [
                    "config",
                    "set",
                    "--secret",
                    "--path",
                    "gpu-queues:kueue.manifest.url",
                    "https://user:pass@mirror.example.invalid/kueue/v0.18.3/manifests.yaml",
                ],
                None,
            ),
        ],
    ),
    "kubeconfig-without-path": (
        "dev",
        [(["config", "set", "--secret", "gpu-queues:kubernetes.kubeconfig"], KUBECONFIG)],
    ),
    "whole-object-secret": (
        "dev",
        [(["config", "set", "--secret", "gpu-queues:kubernetes", '{"kubeconfig": "x"}'], None)],
    ),
    # A stack file Pulumi creates from nothing: only the salt, then only what is set.
    "fresh": (None, [(["config", "set", "--path", "gpu-queues:kueue.version", "v0.18.3"], None)]),
}

_CIPHER = re.compile(r"v1:[A-Za-z0-9+/=]+(:v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+)?")


def masked(text: str) -> str:
    """The text with salts and ciphertexts (random on every run) replaced by one token."""
    return _CIPHER.sub("v1:MASKED", text)


def _run(project: Path, state: Path, args: Sequence[str], stdin: str | None) -> None:
    env = {
        **os.environ,
        "PULUMI_HOME": str(state / "home"),
        "PULUMI_BACKEND_URL": f"file://{state / 'backend'}",
        "PULUMI_CONFIG_PASSPHRASE": "fixture-passphrase",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
    }
    done = subprocess.run(
        ["pulumi", "--non-interactive", *args],
        cwd=project,
        env=env,
        input=stdin,
        text=True,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pulumi {' '.join(args)} failed: {done.stdout}{done.stderr}")


def capture(root: Path = ROOT) -> dict[str, str]:
    """Run every scenario with the CLI on PATH; fixture name -> the stack file it left."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="gpuq-cli-") as tmp:
        for name, (start, steps) in SCENARIOS.items():
            project, state = Path(tmp) / name / "project", Path(tmp) / name / "state"
            (state / "backend").mkdir(parents=True)
            project.mkdir(parents=True)
            shutil.copy(root / "Pulumi.yaml", project / "Pulumi.yaml")
            stack = start or "fresh"
            if start is not None:
                shutil.copy(root / f"Pulumi.{start}.yaml", project / f"Pulumi.{stack}.yaml")
            _run(project, state, ["stack", "select", "--create", stack], None)
            for args, stdin in steps:
                _run(project, state, [*args, "-s", stack], stdin)
            out[name] = (project / f"Pulumi.{stack}.yaml").read_text()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"save the capture in {DATA}")
    args = parser.parse_args()
    captured = capture()
    if args.write:
        DATA.mkdir(parents=True, exist_ok=True)
        for name, text in captured.items():
            (DATA / f"{name}.yaml").write_text(text)
    for name, text in captured.items():
        print(f"--- {name}\n{text}")


if __name__ == "__main__":
    main()
