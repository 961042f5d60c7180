"""The PR preview's what-if (preview.yml): which stacks it replays, and that each step does
what the what-if needs, in order: the Go-built sandbox binaries from the cache kept on main,
the official Pulumi release where the sandbox's runner finds it, the replay against the PR's
base as root, and its tables as a section of the stack's quota-diff comment. (actionlint
with shellcheck, the pins and the cache keys are checked for every workflow in
test_workflows.py.)"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.tools.pr_comment import main as pr_comment_main
from gpu_queues.tools.whatif_ci import main as whatif_ci_main
from gpu_queues.tools.whatif_ci import whatif_stacks
from gpu_queues.whatif import cli as whatif_cli
from gpu_queues.whatif.mix import Catalog, load_mix
from tests.conftest import read_yaml
from tests.unit.conftest import git

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
PREVIEW = ROOT / ".github" / "workflows" / "preview.yml"
SANDBOX_TOOLS = {"etcd", "k8s", "kwok", "jobset", "lws", "kuberay", "training_operator", "kueue"}
SANDBOX_TOOLS |= {"mpi_operator", "trainer"}


def _workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = read_yaml(PREVIEW)
    return loaded


def _jobs() -> dict[str, Any]:
    jobs: dict[str, Any] = _workflow()["jobs"]
    return jobs


def _step(job: str, pattern: str) -> tuple[int, dict[str, Any]]:
    steps = _jobs()[job]["steps"]
    found = [(i, s) for i, s in enumerate(steps) if re.search(pattern, s.get("run", ""))]
    assert len(found) == 1, f"{job}: {len(found)} steps run {pattern!r}"
    return found[0]


def _index(job: str, uses: str) -> int:
    steps = _jobs()[job]["steps"]
    return next(i for i, s in enumerate(steps) if s.get("uses", "").startswith(uses))


def _command(run: str, module: str) -> list[str]:
    """The arguments a run: step passes to `python -m <module>`: the rest of its (continued)
    line, out of a `$(...)` if it is in one."""
    line = next(x for x in run.replace("\\\n", " ").splitlines() if f"-m {module} " in x)
    rest = line.split(f"-m {module} ", 1)[1].strip()
    return shlex.split(rest.removesuffix(")"))


# --- which stacks -------------------------------------------------------------------------


def test_the_stacks_job_hands_the_what_if_its_stacks() -> None:
    stacks = _jobs()["stacks"]
    assert stacks["outputs"]["whatif"] == "${{ steps.whatif.outputs.stacks }}"
    _, step = _step("stacks", r"gpu_queues\.tools\.whatif_ci")
    assert _command(step["run"], "gpu_queues.tools.whatif_ci") == [
        "--base",
        "$BASE_SHA",
        "--head",
        "$HEAD_SHA",
    ]
    assert step["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert 'echo "stacks=$stacks" >> "$GITHUB_OUTPUT"' in step["run"]
    job = _jobs()["what-if"]
    assert job["if"] == "needs.stacks.outputs.whatif != '[]'"
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.whatif) }}"
    assert set(job["needs"]) == {"checks", "stacks", "sandbox-binaries"}


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["Pulumi.staging.yaml"], ["staging"]),
        (["Pulumi.dev.yaml"], []),  # no mix for dev
        (["gpu_queues/components/queues.py"], ["staging", "prod"]),
        (["workloads/prod/nlp.yaml"], ["prod"]),
        (["workloads/local/x.yaml", "Pulumi.local.yaml"], []),  # sandbox stacks never
        (["README.md", "tests/e2e/x.py", "workloads/README.md"], []),
    ],
)
def test_stacks_replayed_are_touched_ones_with_a_mix(paths: list[str], expected: list[str]) -> None:
    stacks = ["dev", "staging", "prod", "local"]
    assert whatif_stacks(paths, stacks, {"staging", "prod", "local"}) == expected


def test_whatif_ci_reads_the_change_and_the_mixes_from_git(tmp_path: Path, capsys) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    for stack in ("dev", "staging", "prod"):
        (tmp_path / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    (tmp_path / "workloads" / "prod").mkdir(parents=True)
    (tmp_path / "workloads" / "prod" / "day.yaml").write_text("kind: Job\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "base")
    for stack in ("dev", "staging", "prod"):
        (tmp_path / f"Pulumi.{stack}.yaml").write_text("config: {a: 1}\n")
    (tmp_path / "workloads" / "staging").mkdir()
    (tmp_path / "workloads" / "staging" / "day.yaml").write_text("kind: Job\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-qm", "head")
    assert whatif_ci_main(["--base", "HEAD~1", "--head", "HEAD", "--root", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == ["staging", "prod"]
    assert whatif_ci_main(["--base", "nope", "--root", str(tmp_path)]) == 2


def test_the_committed_mixes_are_for_deployable_stacks_with_a_stack_file() -> None:
    mixes = sorted(p.name for p in (ROOT / "workloads").iterdir() if p.is_dir())
    assert mixes == ["prod", "staging"]
    for stack in mixes:
        assert (ROOT / f"Pulumi.{stack}.yaml").is_file()


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_each_committed_mix_is_a_valid_day_with_sizes_and_jobs_that_must_wait(stack: str) -> None:
    config = load_config({k: v for k, v in read_config(stack, ROOT).items() if k != "kubernetes"})
    integrations = config.kueue.manager.integrations
    frameworks = (integrations.frameworks if integrations else None) or ["batch/job"]
    entries = load_mix(ROOT / "workloads" / stack, Catalog.from_stack(config, frameworks), ROOT)
    # Every workload replays: a problem in the example would be a row of "invalid".
    assert [(e.source, e.problem) for e in entries if e.status != "ok"] == []
    assert len(entries) >= 24
    assert {e.team for e in entries} == {t.name for t in config.teams}
    assert max(e.submit_at for e in entries) >= 12 * 3600  # spread over the day
    assert len({e.gpus for e in entries}) >= 3  # a mix of sizes
    # Some must wait: at some submission, what has been asked and has not ended yet (as if
    # every job ran from its submission) is more than the cluster's GPUs.
    capacity = sum(
        int(n.resources.get("nvidia.com/gpu", "0")) for f in config.flavors for n in f.node_list()
    )
    assert capacity > 0

    def asked(at: float) -> int:
        return sum(
            e.gpus
            for e in entries
            if e.submit_at <= at and (e.duration is None or e.submit_at + e.duration > at)
        )

    assert max(asked(e.submit_at) for e in entries) > capacity


# --- the steps ------------------------------------------------------------------------------


def test_sandbox_binaries_are_built_under_the_cache_and_kept_on_main() -> None:
    # The job has no `if`: it runs on the pushes to main that keep the cache every PR restores.
    assert "if" not in _jobs()["sandbox-binaries"]
    i, step = _step("sandbox-binaries", r"build\.sh")
    assert set(shlex.split(step["run"])[2:]) == SANDBOX_TOOLS
    # The what-if needs only Kueue's releases and the fast engine built against each.
    j, build = _step("what-if", r"build\.sh")
    assert shlex.split(build["run"])[2:] == ["kueue"]
    for job, at in (("sandbox-binaries", i), ("what-if", j)):
        assert _index(job, "actions/cache@") < at
        cache = _jobs()[job]["steps"][_index(job, "actions/cache@")]
        assert cache["with"]["key"].startswith("toolchain-sandbox-")
        assert "toolchain/go/whatif/**" in cache["with"]["key"], "the engine's source keys it"
    keys = {
        _jobs()[j]["steps"][_index(j, "actions/cache@")]["with"]["key"]
        for j in ("sandbox-binaries", "what-if")
    }
    assert len(keys) == 1, "the what-if restores exactly what sandbox-binaries saved"


def test_the_what_if_needs_no_sandbox_no_root_and_no_pulumi() -> None:
    """The fast engine runs the mix on Kueue's own code in one process: the job installs no
    Pulumi CLI or provider and runs nothing as root."""
    runs = " ".join(s.get("run", "") for s in _jobs()["what-if"]["steps"])
    assert "install-official.sh" not in runs
    assert "sudo" not in runs


def test_the_replay_runs_the_fast_engine_against_the_prs_base_and_parses() -> None:
    i, step = _step("what-if", r"gpu_queues\.whatif\.cli ")
    assert i > _step("what-if", r"build\.sh")[0]
    assert step["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    assert step["env"]["STACK"] == "${{ matrix.stack }}"
    args = _command(step["run"], "gpu_queues.whatif.cli")
    assert args == [
        "--stack", "$STACK", "--workloads", "workloads/$STACK", "--base", "$BASE_SHA",
        "--out", "$RUNNER_TEMP/what-if", "--engine", "fast",
    ]  # fmt: skip
    env = {"$STACK": "staging", "$BASE_SHA": "0" * 40, "$RUNNER_TEMP": "/tmp/r"}
    parsed = whatif_cli.make_parser().parse_args(
        [re.sub(r"\$\w+", lambda m: env[m.group(0)], a) for a in args]
    )
    assert (parsed.stack, str(parsed.workloads), parsed.base, parsed.engine) == (
        "staging",
        "workloads/staging",
        "0" * 40,
        "fast",
    )
    assert (ROOT / "workloads" / "staging").is_dir()
    assert _jobs()["checks"]["steps"], "checks still gate it"
    assert "fetch-depth" in _jobs()["what-if"]["steps"][0]["with"], "the base must be fetched"


def test_the_report_goes_to_the_stacks_quota_diff_comment_as_a_section(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    i, step = _step("what-if", r"gpu_queues\.tools\.pr_comment")
    assert i > _step("what-if", r"gpu_queues\.whatif\.cli ")[0]
    args = _command(step["run"], "gpu_queues.tools.pr_comment")
    assert args == [
        "--pr", "$PR", "--marker", "quota-diff-$STACK", "--section", "what-if",
        "--body-file", "$RUNNER_TEMP/what-if/report.md",
    ]  # fmt: skip
    # The same marker as the quota diff pulumi.yml posts for the stack: one comment.
    pulumi = (ROOT / ".github" / "workflows" / "pulumi.yml").read_text()
    assert '--marker "quota-diff-$STACK"' in pulumi
    assert step["env"]["GITHUB_TOKEN"] == "${{ github.token }}"
    # The step's own arguments, run against a fake API: the report lands as the what-if
    # section of the stack's comment, the quota diff already there is left alone.
    (tmp_path / "what-if").mkdir()
    (tmp_path / "what-if" / "report.md").write_text("### What-if")
    posted: list[tuple[str, str, Any]] = []
    existing = {"id": 5, "body": "<!-- quota-diff-staging -->\n| quota diff |"}

    def api(method: str, url: str, body: dict[str, Any] | None) -> Any:
        posted.append((method, url, body))
        return [existing] if method == "GET" and url.endswith("page=1") else {}

    monkeypatch.setenv("GITHUB_TOKEN", "t")
    monkeypatch.setenv("GITHUB_REPOSITORY", "o/r")
    monkeypatch.setattr("gpu_queues.tools.pr_comment.github_request", lambda token: api)
    env = {"$PR": "7", "$STACK": "staging", "$RUNNER_TEMP": str(tmp_path)}
    argv = [re.sub(r"\$\w+", lambda m: env[m.group(0)], a) for a in args]
    assert pr_comment_main(argv) == 0
    assert capsys.readouterr().out == "updated\n"
    (patch,) = [p for p in posted if p[0] == "PATCH"]
    assert patch[1].endswith("/repos/o/r/issues/comments/5")
    assert patch[2]["body"] == (
        "<!-- quota-diff-staging -->\n| quota diff |\n"
        "<!-- section:what-if -->\n### What-if\n<!-- /section:what-if -->"
    )
    # --section is validated: an empty name is a usage error naming it, nothing is posted.
    posted.clear()
    at = argv.index("--section")
    with pytest.raises(SystemExit) as refused:
        pr_comment_main([*argv[:at], "--section", "", *argv[at + 2 :]])
    assert refused.value.code == 2
    assert "--section '': letters, digits" in capsys.readouterr().err
    assert posted == []
