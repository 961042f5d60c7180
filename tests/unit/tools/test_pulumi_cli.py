"""The one Pulumi CLI runner (gpu_queues/tools/pulumi_cli.py) against a fake `pulumi` on PATH:
a shell script that records its argv, environment, working directory and stdin, and prints,
fails or succeeds as a test tells it. The runner goes through a copy of toolchain/run in a
throwaway project root (which has no .toolchain/bin, so the fake is the `pulumi` it finds)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_queues.tools import promote, pulumi_cli
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

FAKE_PULUMI = """#!/bin/sh
echo $$ > "$FAKE_LOG/pid"
printf '%s\\n' "$@" > "$FAKE_LOG/argv"
env > "$FAKE_LOG/env"
pwd > "$FAKE_LOG/cwd"
if [ -n "${FAKE_READ_STDIN:-}" ]; then cat > "$FAKE_LOG/stdin"; fi
if [ -n "${FAKE_SLEEP:-}" ]; then sleep "$FAKE_SLEEP"; fi
if [ -n "${FAKE_OUT:-}" ]; then printf '%s' "$FAKE_OUT"; fi
if [ -n "${FAKE_ERR:-}" ]; then printf '%s\\n' "$FAKE_ERR" >&2; fi
exit "${FAKE_RC:-0}"
"""


@dataclass
class Fake:
    root: Path  # a project root with toolchain/run
    state: Path  # its Pulumi state (GPU_QUEUES_PULUMI_DIR)
    log: Path  # what the fake recorded
    env: dict[str, str]

    def argv(self) -> list[str]:
        return (self.log / "argv").read_text().splitlines()

    def environ(self) -> dict[str, str]:
        lines = (self.log / "env").read_text().splitlines()
        return dict(line.split("=", 1) for line in lines if "=" in line)

    def passphrase(self) -> str:
        return (self.state / "passphrase").read_text().strip()

    def told(self, **fake: str) -> dict[str, str]:
        """The environment, with FAKE_OUT / FAKE_ERR / FAKE_RC / FAKE_READ_STDIN / FAKE_SLEEP."""
        return {**self.env, **{f"FAKE_{k.upper()}": v for k, v in fake.items()}}

    def inherit(self, monkeypatch: pytest.MonkeyPatch, **fake: str) -> None:
        """Make told(**fake) this process's environment (for callers that pass no env)."""
        env = self.told(**fake)
        for key in [*os.environ]:
            if key not in env:
                monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    root = tmp_path / "project"
    (root / "toolchain").mkdir(parents=True)
    for name in ("run", "pins.env"):
        shutil.copy2(ROOT / "toolchain" / name, root / "toolchain" / name)
    bin_dir, log, state = tmp_path / "bin", tmp_path / "log", tmp_path / "state"
    bin_dir.mkdir()
    log.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(FAKE_PULUMI)
    script.chmod(0o755)
    # A caller pointing at real stacks (CI's backend and passphrase): private_state drops them.
    caller = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "FAKE_LOG": str(log),
        "PULUMI_BACKEND_URL": "s3://real-state",
        "PULUMI_ACCESS_TOKEN": "pul-not-for-here",
        "PULUMI_CONFIG_PASSPHRASE": "the-ci-passphrase",
    }
    return Fake(root, state, log, pulumi_cli.private_state(state, caller))


def test_a_command_runs_through_toolchain_run_non_interactively_in_the_offline_environment(
    fake: Fake, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = pulumi_cli.run(
        ["preview", "--diff"], stack="dev", cwd=work, env=fake.told(out="ok"), root=fake.root
    )
    assert (done.returncode, done.stdout) == (0, "ok")
    assert fake.argv() == ["--non-interactive", "preview", "--diff", "-s", "dev"]
    assert (fake.log / "cwd").read_text().strip() == str(work)
    env = fake.environ()
    assert env["PULUMI_HOME"] == str(fake.state / "home")
    # Not the caller's; no attribute sidecars, which a kill can leave empty (toolchain/run).
    assert env["PULUMI_BACKEND_URL"] == f"file://{fake.state / 'backend'}?metadata=skip"
    assert env["PULUMI_SKIP_UPDATE_CHECK"] == "true"
    assert env["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"
    assert Path(env["TMPDIR"]).parent == fake.state / "tmp"
    assert env["PATH"].split(os.pathsep)[0] == str(fake.root / ".toolchain" / "bin")
    assert "PULUMI_ACCESS_TOKEN" not in env


def test_the_passphrase_is_a_private_file_never_in_argv_or_output(fake: Fake) -> None:
    done = pulumi_cli.run(["stack", "ls"], env=fake.told(out="ok"), root=fake.root)
    env = fake.environ()
    assert "PULUMI_CONFIG_PASSPHRASE" not in env  # the caller's (CI's) was dropped
    path = Path(env["PULUMI_CONFIG_PASSPHRASE_FILE"])
    assert path == fake.state / "passphrase"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = fake.passphrase()
    assert secret
    assert not any(secret in arg for arg in fake.argv())
    assert secret not in done.stdout + done.stderr
    # A failing command's error shows none of it either.
    with pytest.raises(pulumi_cli.PulumiError) as caught:
        pulumi_cli.run(["up"], env=fake.told(rc="1", err="error: nope"), root=fake.root)
    assert secret not in str(caught.value)
    assert fake.passphrase() == secret  # one passphrase per state directory, kept


def test_a_failure_names_the_command_its_exit_status_and_stderr(fake: Fake) -> None:
    with pytest.raises(pulumi_cli.PulumiError) as caught:
        pulumi_cli.run(
            ["up", "--yes"],
            stack="dev",
            env=fake.told(rc="3", out="decrypted: s3cr3t", err="warning: x\nerror: boom"),
            root=fake.root,
        )
    error = caught.value
    assert str(error) == "`pulumi up --yes -s dev` exited 3: warning: x\nerror: boom"
    assert (error.returncode, error.reason, error.command) == (
        3,
        "error: boom",
        "pulumi up --yes -s dev",
    )
    assert "s3cr3t" not in str(error)  # stdout (maybe decrypted values) stays out of the message
    assert error.stdout == "decrypted: s3cr3t"
    # check=False: the caller reads the exit status.
    done = pulumi_cli.run(["up"], env=fake.told(rc="3"), check=False, root=fake.root)
    assert done.returncode == 3


def test_a_command_that_outlives_its_timeout_is_stopped(fake: Fake) -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired) as expired:
        pulumi_cli.run(["up"], env=fake.told(sleep="10"), timeout=0.5, root=fake.root)
    assert expired.value.timeout == 0.5
    assert time.monotonic() - started < 5, "it waited for the command instead of stopping it"
    # The command itself (toolchain/run execs it) is gone, not left running on its own.
    pid = int((fake.log / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists(), f"pulumi (pid {pid}) still runs"


def test_a_secret_goes_through_stdin_and_never_into_argv_or_the_error(fake: Fake) -> None:
    with pytest.raises(pulumi_cli.PulumiError) as caught:
        pulumi_cli.run(
            ["config", "set", "--secret", "--path", "gpu-queues:kubernetes.kubeconfig"],
            stack="local",
            stdin="client-key-data: s3cr3t",
            env=fake.told(read_stdin="1", rc="1", err="error: no stack"),
            root=fake.root,
        )
    assert (fake.log / "stdin").read_text() == "client-key-data: s3cr3t"
    assert not any("s3cr3t" in arg for arg in fake.argv())
    assert "s3cr3t" not in str(caught.value)


def test_stack_outputs_are_the_json_object_the_cli_prints(fake: Fake) -> None:
    printed = {"kueueVersion": "v0.18.3", "kubeconfig": "[secret]"}
    outputs = pulumi_cli.stack_outputs(
        "staging", env=fake.told(out=json.dumps(printed)), root=fake.root
    )
    assert outputs == printed
    assert fake.argv() == ["--non-interactive", "stack", "output", "--json", "-s", "staging"]
    with pytest.raises(
        pulumi_cli.PulumiOutputError, match=r"^stack output of 'staging' is not JSON"
    ):
        pulumi_cli.stack_outputs("staging", env=fake.told(out="{oops"), root=fake.root)
    with pytest.raises(
        pulumi_cli.PulumiOutputError, match=r"^stack output of 'staging' is not a JSON object$"
    ):
        pulumi_cli.stack_outputs("staging", env=fake.told(out="[1]"), root=fake.root)
    assert pulumi_cli.stack_outputs("staging", env=fake.env, root=fake.root) == {}


def test_promote_reads_outputs_through_the_runner_with_its_messages_unchanged(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.inherit(monkeypatch, out='{"kueueVersion": "v0.18.3"}')
    assert promote.fetch_outputs("dev", fake.root) == {"kueueVersion": "v0.18.3"}
    assert fake.argv() == ["--non-interactive", "stack", "output", "--json", "-s", "dev"]
    assert (fake.log / "cwd").read_text().strip() == str(fake.root)
    fake.inherit(monkeypatch, rc="255", err="error: no stack named 'dev' found")
    with pytest.raises(promote.PromotionError) as caught:
        promote.fetch_outputs("dev", fake.root)
    assert str(caught.value) == (
        "refusing to promote: cannot read the outputs of stack 'dev' (is it deployed?): "
        "error: no stack named 'dev' found"
    )
    fake.inherit(monkeypatch, out="not json")
    with pytest.raises(promote.PromotionError, match=r"^stack output of 'dev' is not JSON: "):
        promote.fetch_outputs("dev", fake.root)


def test_a_config_value_is_what_the_cli_prints(fake: Fake) -> None:
    value = pulumi_cli.config_value(
        "gpu-queues:kubernetes.kubeconfig", "prod", env=fake.told(out="apiVersion: v1\n"),
        root=fake.root,
    )  # fmt: skip
    assert value == "apiVersion: v1\n"
    assert fake.argv() == [
        "--non-interactive", "config", "get", "--path", "gpu-queues:kubernetes.kubeconfig",
        "-s", "prod",
    ]  # fmt: skip


def test_a_background_command_writes_its_output_to_the_log(fake: Fake, tmp_path: Path) -> None:
    log = tmp_path / "up.log"
    proc = pulumi_cli.start(
        ["up", "--yes"], stack="local", log=log, env=fake.told(out="out", err="err"),
        root=fake.root,
    )  # fmt: skip
    assert proc.wait(timeout=60) == 0
    assert fake.argv() == ["--non-interactive", "up", "--yes", "-s", "local"]
    assert log.read_text() == "outerr\n"  # stdout and stderr, in the order written


def test_private_state_drops_the_settings_for_real_stacks() -> None:
    base = {
        "HOME": "/home/x",
        "PULUMI_BACKEND_URL": "s3://real",
        "PULUMI_ACCESS_TOKEN": "pul-123",
        "PULUMI_CONFIG_PASSPHRASE": "ci",
        "PULUMI_CONFIG_PASSPHRASE_FILE": "/ci/passphrase",
    }
    assert pulumi_cli.private_state(Path("/s"), base) == {
        "HOME": "/home/x",
        "GPU_QUEUES_PULUMI_DIR": "/s",
    }
