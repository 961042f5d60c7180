"""gpu-queues' Python language host (toolchain/go/pulumi-language-python) runs what upstream's
runs: small programs, a policy pack and a tool plugin through the real Pulumi CLI and a file
backend, covering the cases of upstream's language tests that apply to a host without code
generation (l1-empty, l1-main, l1-builtin-info/cwd/project-root-main, l1-config-*,
l1-stack-reference, l1-output-*, policy-stack-config, policy-dryrun, policy-config), plus its
own Go unit tests."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.pins import read_pins
from tests.fixtures.python_programs import (
    FIXTURES,
    ROOT,
    RUN,
    Backend,
    Project,
    copy_fixture,
    output_of,
)

pytestmark = pytest.mark.toolchain

HOST = ROOT / "toolchain" / "go" / "pulumi-language-python"
PINS = read_pins()


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    """One file backend and PULUMI_HOME for the module (stacks have generated names)."""
    yield Backend(tmp_path_factory.mktemp("pulumi"))


def test_go_unit_tests_of_the_host_pass() -> None:
    """src/host_test.go: PEP 440 -> plugin versions, executor arguments, config environment,
    exit codes, runtime options, the policy pack's stack environment, where a generated SDK is
    written."""
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "CGO_ENABLED": "0"}
    done = subprocess.run(
        ["go", "test", "./src"],
        cwd=HOST,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, output_of(done)


# --- programs --------------------------------------------------------------------------------


@dataclass
class BasicRun:
    """One preview and one up of the basic program (no config at all) on a stack whose name
    uses every character class a stack name may hold, shared by the tests that read it."""

    project: Project
    preview: subprocess.CompletedProcess[str]
    up: subprocess.CompletedProcess[str]
    outputs: dict[str, Any]  # pulumi stack output --json --show-secrets
    masked: subprocess.CompletedProcess[str]  # pulumi stack output --json


@pytest.fixture(scope="module")
def basic(tmp_path_factory: pytest.TempPathFactory, backend: Backend) -> BasicRun:
    project = Project(
        "basic", tmp_path_factory.mktemp("basic"), backend, stack=f"Odd_Stack-{os.getpid()}.x9"
    )
    preview = project.pulumi("preview")
    up = project.up()
    assert up.returncode == 0, output_of(up)
    masked = project.pulumi("stack", "output", "--json")
    return BasicRun(project, preview, up, project.outputs(), masked)


def test_a_stack_with_no_config_previews_and_deploys(basic: BasicRun) -> None:
    """A new user's first stack: no config at all (upstream's l1-empty)."""
    stack_file = basic.project.work / f"Pulumi.{basic.project.stack}.yaml"
    assert "config:" not in stack_file.read_text()  # only the passphrase salt: really no config
    assert basic.preview.returncode == 0, output_of(basic.preview)
    assert "AttributeError" not in output_of(basic.preview)
    assert basic.up.returncode == 0, output_of(basic.up)


def test_program_sees_project_stack_and_organization_names(basic: BasicRun) -> None:
    """pulumi.get_project/get_stack/get_organization (l1-builtin-info)."""
    assert basic.outputs["project"] == "host-basic"
    assert basic.outputs["stack"] == basic.project.stack
    assert basic.outputs["organization"] == "organization"  # the file backend's organization


def test_program_runs_in_its_directory_with_the_project_root(basic: BasicRun) -> None:
    """l1-builtin-cwd: the working and root directory are the project's."""
    assert Path(basic.outputs["cwd"]).resolve() == basic.project.work.resolve()
    assert Path(basic.outputs["root"]).resolve() == basic.project.work.resolve()


def test_is_dry_run_is_true_in_preview_and_false_in_up(basic: BasicRun) -> None:
    assert "basic-stdout dry_run=True" in basic.preview.stdout, output_of(basic.preview)
    assert "basic-stdout dry_run=False" in basic.up.stdout, output_of(basic.up)
    assert basic.outputs["dry_run"] is False


def test_program_stdout_and_stderr_reach_the_cli(basic: BasicRun) -> None:
    assert "basic-stdout dry_run=False" in basic.up.stdout
    assert "basic-stderr dry_run=False" in basic.up.stdout  # the engine shows both streams


def test_stack_outputs_plain_structured_and_secret(basic: BasicRun) -> None:
    """l1-output-*: values keep their JSON types; a secret output is masked unless asked for."""
    assert "basic-secret-value" not in output_of(basic.up)
    assert basic.outputs["structured"] == {"list": [1, 2.5, True, None], "text": "ünïcode ✓"}
    assert basic.outputs["secret"] == "basic-secret-value"
    assert json.loads(basic.masked.stdout)["secret"] == "[secret]"
    assert "basic-secret-value" not in output_of(basic.masked)


def test_config_plain_typed_structured_object_and_secret(tmp_path: Path, backend: Backend) -> None:
    """l1-config-types-*, l1-config-secret: every kind of config pulumi.Config reads."""
    project = Project("config", tmp_path, backend)
    secret = f"hunter2-{os.getpid()}"
    project.config("plain", "a plain value with spaces: ok")
    project.config("count", "42")
    project.config("ratio", "0.25")
    project.config("enabled", "true")
    project.config("structured.teams[0].name", "alpha", "--path")
    project.config("structured.teams[0].gpus", "4", "--path")
    project.config("structured.teams[1].name", "beta", "--path")
    project.config("structured.enabled", "false", "--path")
    project.config("object", json.dumps({"a": {"b": [1, "two"]}}))
    project.config("other-ns:key", "from another namespace")
    project.config("password", secret, "--secret")
    project.config("vault.user", "svc", "--path")
    project.config("vault.token", f"tok-{secret}", "--path", "--secret")

    up = project.up()
    assert up.returncode == 0, output_of(up)
    assert secret not in output_of(up)
    outputs = project.outputs()
    assert outputs["plain"] == "a plain value with spaces: ok"
    assert outputs["missing_is_none"] is True
    assert outputs["count"] == 42
    assert outputs["ratio"] == 0.25
    assert outputs["enabled"] is True
    assert outputs["structured"] == {
        "teams": [{"name": "alpha", "gpus": 4}, {"name": "beta"}],
        "enabled": False,
    }
    assert outputs["object"] == {"a": {"b": [1, "two"]}}
    assert outputs["other"] == "from another namespace"
    assert outputs["password"] == secret
    assert outputs["password_length"] == len(secret)
    assert outputs["vault"] == {"user": "svc", "token": f"tok-{secret}"}
    masked = json.loads(project.pulumi("stack", "output", "--json").stdout)
    for key in ("password", "password_length", "vault"):
        assert masked[key] == "[secret]", key


def test_stack_reference_reads_plain_and_secret_outputs(
    tmp_path: Path, backend: Backend, basic: BasicRun
) -> None:
    """l1-stack-reference: another stack's outputs, secrets staying secret."""
    source = basic.project
    project = Project("stack-reference", tmp_path, backend)
    project.config("source", f"organization/host-basic/{source.stack}")
    up = project.up()
    assert up.returncode == 0, output_of(up)
    outputs = project.outputs()
    assert outputs == {
        "plain": source.stack,
        "secret": "basic-secret-value",
        "secret_unsecret": "basic-secret-value",
    }
    masked = json.loads(project.pulumi("stack", "output", "--json").stdout)
    assert masked["secret"] == "[secret]"
    assert masked["secret_unsecret"] == "basic-secret-value"


def test_main_option_runs_a_package_directory(tmp_path: Path, backend: Backend) -> None:
    """l1-main, l1-builtin-project-root-main: `main: app/` runs app/__main__.py, in app/,
    which imports its sibling module; the root directory stays where Pulumi.yaml is. Then
    `refresh --run-program` and `destroy --run-program`."""
    project = Project("main-subdir", tmp_path, backend)
    up = project.up()
    assert up.returncode == 0, output_of(up)
    outputs = project.outputs()
    assert outputs["greeting"] == "hello from helper.py"
    assert Path(outputs["cwd"]).resolve() == (project.work / "app").resolve()
    assert Path(outputs["root"]).resolve() == project.work.resolve()
    # refresh and destroy that run the program go through the host too.
    for command in ("refresh", "destroy"):
        done = project.pulumi(command, "--yes", "--skip-preview", "--run-program")
        assert done.returncode == 0, output_of(done)
    assert project.outputs() == {}


def test_unhandled_exception_fails_with_the_programs_traceback(
    tmp_path: Path, backend: Backend
) -> None:
    project = Project("failing", tmp_path, backend)
    project.config("mode", "raise")
    project.config("detail", "detail-1234")
    up = project.up()
    out = output_of(up)
    assert up.returncode != 0, out
    assert "Program failed with an unhandled exception" in out
    assert "ValueError: boom from the program (detail-1234)" in out
    assert "__main__.py" in out  # the traceback points into the user's program
    # Exit 32: the program already reported its error; the host adds nothing.
    assert "exited with non-zero exit code" not in out


def test_bail_exit_code_32_adds_no_message(tmp_path: Path, backend: Backend) -> None:
    project = Project("failing", tmp_path, backend)
    project.config("mode", "bail")
    up = project.up()
    out = output_of(up)
    assert up.returncode != 0, out
    assert "the program explained the problem itself" in out
    assert "exited with non-zero exit code" not in out


@pytest.mark.parametrize("code", [3, 255])
def test_sys_exit_code_is_reported_as_upstream_does(
    tmp_path: Path, backend: Backend, code: int
) -> None:
    project = Project("failing", tmp_path, backend)
    project.config("mode", "exit")
    project.config("code", str(code))
    up = project.up()
    assert up.returncode != 0, output_of(up)
    assert f"program exited with non-zero exit code: {code}" in output_of(up)


def test_run_error_is_reported_without_a_traceback(tmp_path: Path, backend: Backend) -> None:
    project = Project("failing", tmp_path, backend)
    project.config("mode", "run-error")
    up = project.up()
    out = output_of(up)
    assert up.returncode != 0, out
    assert "a RunError from the program" in out
    assert "Traceback" not in out
    assert "program exited with non-zero exit code: 1" in out


def _running(pid: int) -> bool:
    """Whether pid is a live process (a zombie nobody reaped counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def test_an_attached_host_interrupts_a_cancelled_program_and_keeps_serving(
    tmp_path: Path, backend: Backend, basic: BasicRun
) -> None:
    """A host the user started (PULUMI_DEBUG_LANGUAGES=python:PORT, how hosts are debugged)
    learns the engine's address from Handshake and outlives the CLI, which therefore cannot
    stop its programs itself. Ctrl-C on the CLI reaches the host only as the Cancel RPC: the
    program must stop (SIGINT, a kill 5 s later), and the host must still run the next one."""
    host = subprocess.Popen(
        [str(ROOT / ".toolchain" / "bin" / "pulumi-language-python")],
        env=backend.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert host.stdout is not None
        port = host.stdout.readline().strip()
        assert port.isdigit(), f"host did not print its port: {port!r}"
        attached = {"PULUMI_DEBUG_LANGUAGES": f"python:{port}"}
        # An attached host's programs write to the host's own stdout, not to the CLI.
        host_output: list[str] = []
        threading.Thread(target=lambda: host_output.extend(host.stdout), daemon=True).start()

        project = Project("failing", tmp_path, backend)
        pidfile = tmp_path / "sleeper.pid"
        project.config("mode", "sleep")
        project.config("seconds", "120")
        project.config("pidfile", str(pidfile))
        cli = subprocess.Popen(
            [str(RUN), "pulumi", "--non-interactive", "up", "--yes", "--skip-preview"],
            cwd=project.work,
            env={**backend.env, **attached},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            # The program says "sleeper-started" on the host's stdout just before it sleeps:
            # Ctrl-C then reaches a program that is running, not one still starting.
            deadline = time.monotonic() + 120
            while (
                "sleeper-started" not in "".join(host_output)
                and cli.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.1)
            assert "sleeper-started" in "".join(host_output), "".join(host_output)
            cli.send_signal(signal.SIGINT)
            out, _ = cli.communicate(timeout=120)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        assert pidfile.exists(), out
        pid = int(pidfile.read_text())
        deadline = time.monotonic() + 30  # 5 s after SIGINT the host kills the program
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        still_running = _running(pid)
        if still_running:
            os.kill(pid, signal.SIGKILL)
        assert not still_running, "the program kept running after the CLI was interrupted"
        assert "update canceled" in out, out
        assert "sleeper-finished" not in "".join(host_output)

        # The same host runs the next program (a stack with no config) to completion.
        preview = basic.project.pulumi("preview", **attached)
        assert preview.returncode == 0, output_of(preview)
        deadline = time.monotonic() + 10  # the host's output is read by another thread
        while "basic-stdout dry_run=True" not in "".join(host_output):
            assert time.monotonic() < deadline, "".join(host_output)
            time.sleep(0.1)
    finally:
        host.send_signal(signal.SIGINT)
        try:
            host.wait(timeout=30)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()


def test_virtualenv_that_is_not_one_is_named_with_the_fix(tmp_path: Path, backend: Backend) -> None:
    project = Project("not-a-venv", tmp_path, backend)
    preview = project.pulumi("preview")
    out = output_of(preview)
    assert preview.returncode != 0, out
    assert "The 'virtualenv' option in Pulumi.yaml is set to \"not-a-venv\"" in out
    assert "doesn't appear to be a virtual environment" in out
    assert "-m venv" in out  # the commands that create it


def test_typechecker_option_stops_a_program_with_a_type_error(
    tmp_path: Path, backend: Backend
) -> None:
    project = Project("typecheck", tmp_path, backend)
    preview = project.pulumi("preview")
    out = output_of(preview)
    assert preview.returncode != 0, out
    assert "mypy failed" in out
    assert "Incompatible types in assignment" in out
    assert "typecheck-program-ran" not in out


class _DapClient:
    """Just enough of the Debug Adapter Protocol to attach to debugpy as an editor does."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.stream = self.sock.makefile("rb")
        self.seq = 0

    def send(self, command: str, arguments: dict[str, object] | None = None) -> None:
        self.seq += 1
        body = json.dumps(
            {"seq": self.seq, "type": "request", "command": command, "arguments": arguments or {}}
        ).encode()
        self.sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def receive_until(self, key: str, value: str) -> None:
        """Read messages until one whose `key` (command or event) is `value`."""
        while True:
            length = 0
            while (line := self.stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert length, "debug adapter closed the connection"
            if json.loads(self.stream.read(length)).get(key) == value:
                return

    def attach_and_run(self) -> None:
        self.send("initialize", {"clientID": "gpu-queues-test", "adapterID": "debugpy"})
        self.receive_until("command", "initialize")
        self.send("attach", {"justMyCode": True})
        self.receive_until("event", "initialized")
        self.send("configurationDone")
        self.receive_until("command", "attach")
        # The program runs now; an editor disconnects when it has terminated.
        self.receive_until("event", "terminated")
        self.send("disconnect")
        self.sock.close()


def test_attach_debugger_waits_for_a_debugger_then_runs(backend: Backend, basic: BasicRun) -> None:
    """`--attach-debugger`: the program starts under debugpy, the CLI announces the port the
    host chose, and the program runs once a client has attached."""
    project = basic.project
    cli = subprocess.Popen(
        [str(RUN), "pulumi", "--non-interactive", "preview", "--attach-debugger"],
        cwd=project.work,
        env=backend.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert cli.stdout is not None
    seen: list[str] = []
    try:
        port = None
        while port is None and (line := cli.stdout.readline()):
            seen.append(line)
            assert "basic-stdout" not in line, "the program ran before a debugger attached"
            if m := re.search(r"Waiting for debugger to attach \(on port (\d+)\)", line):
                port = int(m.group(1))
        assert port is not None, "".join(seen)
        _DapClient(port).attach_and_run()
        rest, _ = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    out = "".join(seen) + rest
    assert cli.returncode == 0, out
    assert "basic-stdout dry_run=True" in out


def test_engine_logging_and_tracing_flags_reach_the_host(tmp_path: Path, basic: BasicRun) -> None:
    """With --logflow the engine starts the host with --logtostderr -v=N and --tracing before its
    address; the host must accept them (upstream's does)."""
    project = basic.project
    trace = tmp_path / "trace.json"
    preview = project.pulumi(
        "preview", "--logflow", "--logtostderr", "-v=1", "--tracing", f"file:{trace}"
    )
    assert preview.returncode == 0, output_of(preview)[-3000:]
    assert "basic-stdout dry_run=True" in preview.stdout


def test_pulumi_about_describes_the_python_toolchain(basic: BasicRun) -> None:
    project = basic.project
    done = project.pulumi("about", "--json")
    assert done.returncode == 0, output_of(done)
    about = json.loads(done.stdout)
    runtime = about["runtime"]
    assert runtime["language"] == "python"
    assert Path(runtime["executable"]) == project.work / "venv" / "bin" / "python"
    assert re.fullmatch(r"3\.\d+\.\d+", runtime["version"]), runtime
    assert runtime["toolchain"] == "Pip"
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", runtime["toolchainVersion"]), runtime
    assert runtime["typechecker"] == "None"
    dependencies = {d["name"]: d["version"] for d in about["dependencies"]}
    # As upstream: the program's top-level packages, those no other installed one requires
    # (pip list --not-required). The venv holds this checkout too (make venv installs it for
    # gpuq), which requires the Pulumi SDKs, so it is listed and they are not.
    python = str(project.work / "venv" / "bin" / "python")

    def pip_list(*only: str) -> dict[str, str]:
        listed = subprocess.run(
            [python, "-m", "pip", "list", *only, "--format", "json", "--disable-pip-version-check"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        # PEP 503's normal form, as the host names them
        return {
            re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"]
            for p in json.loads(listed.stdout)
        }

    assert dependencies == pip_list("--not-required")
    assert dependencies["gpu-queues"] == "0.1.0"
    assert pip_list()["pulumi-kubernetes"] == PINS["PULUMI_KUBERNETES_VERSION"]


def test_pulumi_new_asks_the_host_for_toolchain_and_virtualenv(
    tmp_path: Path, backend: Backend
) -> None:
    """`pulumi new` from a template naming only `runtime: python`: the host's prompts give the
    project a pip toolchain and its own virtualenv (never the ambient Python)."""
    target = tmp_path / "brand-new"
    target.mkdir()
    template = FIXTURES / "python-templates" / "minimal"
    done = backend.run(
        "pulumi", "new", template, "--generate-only", "--yes", "--name", "brand-new",
        "--non-interactive", cwd=target,
    )  # fmt: skip
    assert done.returncode == 0, output_of(done)
    pulumi_yaml = (target / "Pulumi.yaml").read_text()
    assert "name: brand-new" in pulumi_yaml
    assert re.search(r"options:\s+toolchain: pip\s+virtualenv: venv", pulumi_yaml), pulumi_yaml


def test_pulumi_install_creates_the_virtualenv_and_installs_requirements(
    tmp_path: Path, backend: Backend
) -> None:
    """`pulumi install` (PyPI must be reachable: pip, setuptools and wheel are upgraded in the
    new virtualenv, as upstream does) creates `venv` once and installs requirements.txt."""
    project = Project("install", tmp_path, backend, link_venv=False)
    done = project.pulumi("install")
    out = output_of(done)
    assert done.returncode == 0, out
    assert out.count("Creating virtual environment...") == 1, out
    assert "Installing dependencies..." in out
    installed = subprocess.run(
        [
            str(project.work / "venv" / "bin" / "python"),
            "-c",
            "import host_install_localdep as m; print(m.MESSAGE)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert installed.stdout.strip() == "installed by pulumi install", output_of(installed)


# --- policy packs ----------------------------------------------------------------------------


def _policy_run(
    project: Project, tmp_path: Path, command: str, limit: int
) -> subprocess.CompletedProcess[str]:
    pack = copy_fixture("python-policy-packs", "stack-aware", tmp_path / "packs")
    config = tmp_path / "policy-config.json"
    config.write_text(json.dumps({"report-stack": {"limit": limit}}))
    extra = ["--yes", "--skip-preview"] if command == "up" else []
    return project.pulumi(command, *extra, "--policy-pack", pack, "--policy-pack-config", config)


def test_policy_pack_sees_the_stack_in_preview(tmp_path: Path, basic: BasicRun) -> None:
    """policy-stack-config, policy-dryrun, policy-config, on a stack with no config at all."""
    project = basic.project
    preview = _policy_run(project, tmp_path, "preview", limit=7)
    out = output_of(preview)
    assert preview.returncode == 0, out
    assert (
        f"seen: project=host-basic stack={project.stack} organization=organization "
        "dry_run=True expected=<unset> limit=7 cwd=stack-aware"
    ) in out, out


def test_policy_pack_reads_stack_config_in_up(tmp_path: Path, backend: Backend) -> None:
    project = Project("basic", tmp_path, backend)
    project.config("expected", "value-from-stack-config")
    up = _policy_run(project, tmp_path, "up", limit=3)
    out = output_of(up)
    assert up.returncode == 0, out
    assert "dry_run=False expected=value-from-stack-config limit=3" in out, out


# --- plugins ---------------------------------------------------------------------------------


def test_python_tool_plugin_runs_with_its_arguments_and_exit_code(
    tmp_path: Path, backend: Backend
) -> None:
    tool = copy_fixture("python-plugins", "tool", tmp_path)
    done = backend.run("pulumi", "plugin", "run", tool, "--", "first arg", "7", cwd=tmp_path)
    out = output_of(done)
    assert done.returncode == 7, out
    assert "tool-args=['first arg', '7']" in done.stdout, out
    assert "tool-rpc-target=True" in done.stdout
    assert "tool-stderr-line" in done.stderr
    ok = backend.run("pulumi", "plugin", "run", tool, "--", "0", cwd=tmp_path)
    assert ok.returncode == 0, output_of(ok)


def test_the_host_takes_the_runtime_options_older_engines_pass_as_flags() -> None:
    """pulumi-yaml's language host (v1.25.0, on sdk v3.206.0) started a Python plugin's host with
    `-toolchain=... -virtualenv=... -typechecker=... -root=...` before the engine address; the
    host refused them (`flag provided but not defined`), so a YAML program could not load the
    component package (package/). The options themselves come with each request."""
    legacy = ["-toolchain=pip", "-virtualenv=venv", "-typechecker=", "-root=/tmp"]
    done = subprocess.run(
        [str(ROOT / ".toolchain" / "bin" / "pulumi-language-python"), *legacy, "-version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == PINS["PULUMI_VERSION"]
