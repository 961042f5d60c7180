"""Nothing of a secret reaches output (issue 42, class 6): a `secure:` value's ciphertext is
in its own stack file only, never in promote's printed diff nor the advisor's advice.md;
a mix's env values, args and commands are never quoted in a problem the report shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_queues.advise.advice import stack_diff
from gpu_queues.config.secure import HIDDEN, secret_lines, shown_diff
from gpu_queues.tools import promote
from gpu_queues.whatif import shapes
from tests.unit.conftest import Write
from tests.unit.tools.test_promote import DEPLOYED, SOURCE, TARGET

pytestmark = pytest.mark.unit

CIPHER = "v1:Q2lwaGVyVGV4dE9mVGhlS3ViZWNvbmZpZw=="
# Every spelling of a secure kubeconfig beside the kueue block: block, flow, quoted key,
# folded over two lines, a block scalar, and an anchor whose alias is the key's value.
SPELLINGS = {
    "block": f"  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: {CIPHER}\n",
    "flow": f"  gpu-queues:kubernetes:\n    kubeconfig: {{secure: {CIPHER}}}\n",
    "quoted-key": f'  gpu-queues:kubernetes:\n    kubeconfig: {{"secure": "{CIPHER}"}}\n',
    "folded": (
        f"  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: {CIPHER[:20]}\n"
        f"        {CIPHER[20:]}\n"
    ),
    "block-scalar": (
        f"  gpu-queues:kubernetes:\n    kubeconfig:\n      secure: |-\n        {CIPHER}\n"
    ),
    "escaped-key": f'  gpu-queues:kubernetes:\n    kubeconfig: {{"\\x73ecure": "{CIPHER}"}}\n',
}


def with_secret(target: str, spelling: str) -> str:
    """TARGET with a secure kubeconfig just before its kueue block (the diff's context)."""
    return target.replace("config:\n", "config:\n" + SPELLINGS[spelling], 1)


def pieces(text: str) -> list[str]:
    """Any 8 characters of the ciphertext that appear in `text`."""
    return [CIPHER[i : i + 8] for i in range(len(CIPHER) - 7) if CIPHER[i : i + 8] in text]


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_promote_prints_no_part_of_a_secure_value(
    write: Write, project: Path, spelling: str, capsys: pytest.CaptureFixture[str]
) -> None:
    write("dev", SOURCE)
    target = write("staging", with_secret(TARGET, spelling))
    outputs = project / "outputs.json"
    outputs.write_text(json.dumps(DEPLOYED))
    args = ["dev", "staging", "--outputs", str(outputs), "--root", str(project), "--dry-run"]
    assert promote.main(args) == 0
    out = capsys.readouterr()
    assert "+    version: v0.18.3" in out.out  # the diff is printed
    assert HIDDEN in out.out  # and says where a secret line is
    assert pieces(out.out + out.err) == []
    # the file itself keeps it: the edit is written, ciphertext and all
    assert promote.main(args[:-1]) == 0
    assert CIPHER[:20] in target.read_text()
    assert pieces(capsys.readouterr().out) == []


def test_the_advisors_diff_shows_no_part_of_a_secure_value() -> None:
    for spelling in SPELLINGS:
        old = with_secret(TARGET, spelling)
        new = old.replace("v0.17.0", "v0.18.3")  # a line in the secret's context
        diff = stack_diff(old, new, "Pulumi.staging.yaml")
        assert "+    version: v0.18.3" in diff
        assert pieces(diff) == [], (spelling, diff)


def test_a_shown_diff_reads_as_a_unified_diff() -> None:
    """Without secrets it is the unified diff every tool printed before, line for line."""
    import difflib

    old, new = TARGET, TARGET.replace("v0.17.0", "v0.18.3") + "x: 1"
    expected = "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), "a/f", "b/f"
        )
    )
    assert shown_diff(old, new, "f") == expected.replace(
        "x: 1", "x: 1\n\\ No newline at end of file\n"
    )
    assert shown_diff(old, old, "f") == ""
    assert secret_lines("a:\n  secure: x\n   more\nb: 1\n") == {1, 2}


@pytest.mark.parametrize(
    "field, value",
    [
        ("env", [{"name": "TOKEN", "value": 12345678}]),
        ("env", [{"name": "TOKEN", "value": {"hunter2": "s3cr3t"}}]),
        ("env", "TOKEN=hunter2"),
        ("args", ["--token", 12345678]),
        ("args", "--token=hunter2"),
        ("command", ["sh", {"-c": "hunter2"}]),
    ],
    ids=["env-number", "env-mapping", "env-string", "args-number", "args-string", "command"],
)
def test_a_mix_problem_names_the_field_never_its_value(field: str, value: object) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": "alpha"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", field: value}]}}},
    }
    problem = shapes.body_problem(job, "Job")
    assert problem is not None and f"containers[0].{field}" in problem, problem
    for secret in ("hunter2", "s3cr3t", "12345678"):
        assert secret not in problem, problem
    # elsewhere a value is still shown: it helps, and it is no secret
    job["spec"]["parallelism"] = "two"
    job["spec"]["template"]["spec"]["containers"][0].pop(field)
    assert "'two'" in str(shapes.body_problem(job, "Job"))


def test_a_stack_file_error_quotes_no_value() -> None:
    """The YAML parser's message for a duplicate key quotes both values: promote (and every
    reader of a stack file) says which key, never what it holds."""
    from gpu_queues.config.stackfile import StackFileError, parse_yaml

    text = f"config:\n  k:\n    secure: {CIPHER}\n    secure: {CIPHER[::-1]}\n"
    with pytest.raises(StackFileError, match='found duplicate key "secure" at line 4') as err:
        parse_yaml(text, "Pulumi.x.yaml")
    assert pieces(str(err.value)) == [] and pieces(str(err.value)[::-1]) == []
