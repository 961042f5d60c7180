from __future__ import annotations

from pathlib import Path

import pytest

from gpu_queues.config.stackfile import StackFileError
from gpu_queues.tools import quota_diff
from tests.builders import Stack, gpu_flavor, gpu_team
from tests.unit.conftest import Write, git

pytestmark = pytest.mark.unit

BASE = (
    Stack()
    .flavor(gpu_flavor("h100", 8), gpu_flavor("a100", 8))
    .cohort("pool")
    .team(
        gpu_team("research", {"h100": {"gpu": 4, "borrow": 4, "lend": 2}, "a100": {"gpu": 2}}),
        gpu_team("vision", {"h100": {"gpu": 2}}),
    )
    .yaml()
)


def rows(old: quota_diff.Side, new: quota_diff.Side) -> dict[tuple[str, str, str], str]:
    return {
        (r.team, r.flavor, r.resource): r.change
        for r in quota_diff.quota_rows(old.config, new.config)
    }


def test_identical_configs_report_no_quota_changes(write: Write, project: Path) -> None:
    write("a", BASE)
    write("b", BASE)
    out = quota_diff.render(quota_diff.load_side("a", project), quota_diff.load_side("b", project))
    assert "No quota changes." in out
    assert "| research | h100 | nvidia.com/gpu | 4 | 4 | 2 |  |" in out


def test_changed_limits_show_before_and_after(write: Write, project: Path) -> None:
    write("a", BASE)
    write(
        "b",
        BASE.replace("borrowingLimit: 4", "borrowingLimit: 2").replace(
            "lendingLimit: 2", "lendingLimit: 1"
        ),
    )
    old, new = quota_diff.load_side("a", project), quota_diff.load_side("b", project)
    assert rows(old, new)[("research", "h100", "nvidia.com/gpu")] == "changed"
    out = quota_diff.render(old, new, changes_only=True)
    assert "| research | h100 | nvidia.com/gpu | 4 | 4 → **2** | 2 → **1** | changed |" in out
    assert "| vision |" not in out  # unchanged rows are left out with changes_only


def test_added_and_removed_teams_and_flavors(write: Write, project: Path) -> None:
    write("a", BASE)
    write(
        "b",
        Stack()
        .flavor(gpu_flavor("h100", 8), gpu_flavor("l40s", 4))
        .cohort("pool")
        .team(
            gpu_team("research", {"h100": {"gpu": 4, "borrow": 4, "lend": 2}, "l40s": {"gpu": 4}}),
            gpu_team("nlp", {"h100": {"gpu": 2}}),
        )
        .yaml(),
    )
    old, new = quota_diff.load_side("a", project), quota_diff.load_side("b", project)
    changes = rows(old, new)
    assert changes[("research", "a100", "nvidia.com/gpu")] == "removed"
    assert changes[("research", "l40s", "nvidia.com/gpu")] == "added"
    assert changes[("vision", "h100", "cpu")] == "removed"
    assert changes[("nlp", "h100", "nvidia.com/gpu")] == "added"
    assert changes[("research", "h100", "nvidia.com/gpu")] == ""
    out = quota_diff.render(old, new)
    assert "| nlp | h100 | nvidia.com/gpu | 2 | - | - | added |" in out
    assert "| a100 | nvidia.com/gpu | 2 → **-** | 8 → **-** | removed |" in out
    assert "| l40s | nvidia.com/gpu | - → **4** | - → **4** | ok |" in out


def test_gpus_over_declared_capacity_are_flagged(write: Write, project: Path) -> None:
    write("a", BASE)
    write(
        "b",
        Stack()
        .flavor(gpu_flavor("h100", 8), gpu_flavor("a100", 8))
        .cohort("pool")
        .team(
            gpu_team("research", {"h100": {"gpu": 4, "borrow": 4, "lend": 2}, "a100": {"gpu": 9}}),
            gpu_team("vision", {"h100": {"gpu": 2}}),
        )
        .yaml(),
    )
    old, new = quota_diff.load_side("a", project), quota_diff.load_side("b", project)
    caps = {c.flavor: c for c in quota_diff.capacity_rows(old.config, new.config)}
    assert caps["h100"].over is False
    assert caps["a100"].over is True
    out = quota_diff.render(old, new)
    assert f"| a100 | nvidia.com/gpu | 2 → **9** | 8 | {quota_diff.OVER} |" in out
    assert "| h100 | nvidia.com/gpu | 6 | 8 | ok |" in out
    # load_config's own message is listed too, since preview will fail on it
    assert "above the declared capacity" in out
    assert quota_diff.main(["a", "b", "--root", str(project), "--fail-over-capacity"]) == 3


def test_capacity_totals_add_up_every_team(write: Write, project: Path) -> None:
    write(
        "b",
        Stack()
        .flavor(gpu_flavor("h100", 8))
        .cohort("pool")
        .team(gpu_team("research", {"h100": {"gpu": 4}}), gpu_team("vision", {"h100": {"gpu": 7}}))
        .yaml(),
    )
    new = quota_diff.load_side("b", project)
    (cap,) = quota_diff.capacity_rows(new.config, new.config)
    assert cap.total_after == 4 + 7
    assert cap.over


def test_one_stack_at_two_revisions(repo: Path, write: Write) -> None:
    write("staging", BASE)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    write("staging", BASE.replace("nominalQuota: 4", "nominalQuota: 6"))
    old = quota_diff.load_side("staging@HEAD", repo)
    new = quota_diff.load_side("staging", repo)
    out = quota_diff.render(old, new, changes_only=True)
    assert "### Quota diff: `staging@HEAD` → `staging`" in out
    assert "| research | h100 | nvidia.com/gpu | 4 → **6** | 4 | 2 | changed |" in out


def test_unknown_stack_names_the_known_ones(write: Write, project: Path) -> None:
    write("dev", BASE)
    with pytest.raises(StackFileError, match=r"unknown stack 'nope': no Pulumi.nope.yaml .*dev"):
        quota_diff.load_side("nope", project)


def test_unreadable_revision_is_a_clear_error(
    repo: Path, write: Write, capsys: pytest.CaptureFixture[str]
) -> None:
    write("dev", BASE)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    assert quota_diff.main(["dev@no-such-branch", "dev", "--root", str(repo)]) == 2
    err = capsys.readouterr().err
    assert "cannot read revision 'no-such-branch': it is not a commit" in err


def test_stack_missing_at_revision_is_an_error_unless_missing_ok(repo: Path, write: Write) -> None:
    write("dev", BASE)
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    write("prod", BASE)
    with pytest.raises(StackFileError, match=r"unknown stack 'prod' at revision 'HEAD'"):
        quota_diff.load_side("prod@HEAD", repo)
    empty = quota_diff.load_side("prod@HEAD", repo, missing_ok=True)
    changes = rows(empty, quota_diff.load_side("prod", repo))
    assert set(changes.values()) == {"added"}
    with pytest.raises(StackFileError, match="cannot read revision"):
        quota_diff.load_side("prod@nope", repo, missing_ok=True)


def test_malformed_config_is_an_error_naming_the_key(write: Write, project: Path) -> None:
    write("bad", BASE.replace("nominalQuota: 4", "nominalQuota: lots"))
    with pytest.raises(
        StackFileError, match=r"(?s)bad: .*nominalQuota: must be a Kubernetes quantity"
    ):
        quota_diff.load_side("bad", project)


def test_invalid_yaml_is_an_error(write: Write, project: Path) -> None:
    write("bad", "config: [unclosed\n")
    with pytest.raises(StackFileError, match=r"Pulumi\.bad\.yaml is not valid YAML"):
        quota_diff.load_side("bad", project)


def test_real_stacks_staging_to_prod_render() -> None:
    out = quota_diff.render(quota_diff.load_side("staging"), quota_diff.load_side("prod"))
    assert (
        "| research | h100 | nvidia.com/gpu | 4 → **16** | 4 → **8** | 2 → **8** | changed |" in out
    )
    assert "| h100 | nvidia.com/gpu | 8 → **32** | 8 → **32** | ok |" in out


def held(policy: str) -> str:
    """BASE with vision's ClusterQueue at `policy`."""
    return (
        Stack()
        .flavor(gpu_flavor("h100", 8), gpu_flavor("a100", 8))
        .cohort("pool")
        .team(
            gpu_team("research", {"h100": {"gpu": 4, "borrow": 4, "lend": 2}, "a100": {"gpu": 2}}),
            gpu_team("vision", {"h100": {"gpu": 2}}).set(stopPolicy=policy),
        )
        .yaml()
    )


@pytest.mark.parametrize(
    ("before", "after", "first"),
    [
        pytest.param(
            BASE, held("Hold"),
            "**⚠️ team vision stops admitting: new workloads wait (stopPolicy None → Hold); "
            "its 5 admitted workloads keep running**",
            id="hold",
        ),
        pytest.param(
            held("Hold"), held("HoldAndDrain"),
            "**⚠️ team vision: its running jobs will be evicted and nothing new admitted "
            "(stopPolicy Hold → HoldAndDrain); 5 admitted workloads to be evicted**",
            id="drain",
        ),
        pytest.param(
            held("HoldAndDrain"), held("None"),
            "**team vision admits again (stopPolicy HoldAndDrain → None); 5 admitted workloads "
            "now**",
            id="admits-again",
        ),
    ],
)  # fmt: skip
def test_a_stop_policy_change_is_the_first_line_of_the_diff(
    write: Write, project: Path, before: str, after: str, first: str
) -> None:
    write("a", before)
    write("b", after)
    old, new = quota_diff.load_side("a", project), quota_diff.load_side("b", project)
    out = quota_diff.render(old, new, admitted={"vision-cq": 5, "research-cq": 9})
    lines = out.splitlines()
    assert lines[:3] == ["<!-- stop-policy -->", first, "<!-- /stop-policy -->"]
    assert "No quota changes." in out  # the quotas did not move: only the policy did


def test_no_stop_policy_change_leaves_the_diff_as_it_was(write: Write, project: Path) -> None:
    write("a", held("Hold"))
    write("b", held("Hold"))
    out = quota_diff.render(quota_diff.load_side("a", project), quota_diff.load_side("b", project))
    assert out.startswith("### Quota diff:")


def test_the_cli_reads_the_admitted_count_from_the_new_sides_cluster(
    write: Write, project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write("a", BASE)
    write("b", held("HoldAndDrain"))
    asked: list[tuple[str, Path]] = []

    def admitted_of(stack: str, root: Path) -> dict[str, int] | str:
        asked.append((stack, root))
        return "cannot read stack 'b': no cluster here"

    monkeypatch.setattr(quota_diff.status, "admitted_of", admitted_of)
    assert quota_diff.main(["a", "b", "--root", str(project)]) == 0
    first = capsys.readouterr().out.splitlines()[1]
    assert asked == [("b", project)]
    assert first.startswith("**⚠️ team vision: its running jobs will be evicted")
    assert first.endswith(
        "admitted workloads (how many is unknown: cannot read stack 'b': no cluster here) to be "
        "evicted**"
    )
    assert quota_diff.main(["a", "b", "--root", str(project), "--no-cluster"]) == 0
    assert "unknown: not read: --no-cluster)" in capsys.readouterr().out
    assert len(asked) == 1
