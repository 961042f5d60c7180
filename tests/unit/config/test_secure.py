"""Secure values in stack files (issue 10 A1), on stack files the real Pulumi CLI wrote:
tests/unit/config/data/cli/ (regenerate: python -m tests.unit.config.pulumi_fixtures --write)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from gpu_queues.config import secure
from gpu_queues.config.model import ConfigError
from gpu_queues.config.secure import Secure, mark_secure
from gpu_queues.config.stackfile import StackFileError, config_of, parse_document, read_config
from gpu_queues.tools import promote, quota_diff
from tests.unit.config import pulumi_fixtures
from tests.unit.conftest import Write

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
CLI = Path(__file__).resolve().parent / "data" / "cli"
CIPHERTEXT = re.compile(r"v1:[A-Za-z0-9+/=]+:[A-Za-z0-9+/=]+")


def fixture(name: str) -> str:
    return (CLI / f"{name}.yaml").read_text()


def ciphertexts(text: str) -> list[str]:
    return [m for m in CIPHERTEXT.findall(text) if not m.startswith("v1:MASKED")]


def test_pulumi_secure_values_are_marked_by_pulumis_rule() -> None:
    assert mark_secure({"a": {"secure": "v1:x:y"}}) == {"a": Secure("v1:x:y")}
    assert mark_secure([{"secure": "c"}]) == [Secure("c")]
    # not secure for Pulumi either: another key beside it, or a value that is not a string
    assert mark_secure({"secure": "c", "x": 1}) == {"secure": "c", "x": 1}
    assert mark_secure({"secure": 5}) == {"secure": 5}
    assert "v1:" not in repr(Secure("v1:abc:def"))


def test_the_model_says_only_the_kubeconfigs_are_secrets() -> None:
    assert secure.secret_patterns() == (
        ("kubernetes", "kubeconfig"),
        ("multiKueue", "manager", "workers", secure.ANY, "kubeconfig"),
    )

    class Token(BaseModel):
        value: SecretStr

    class Model(BaseModel):
        tokens: list[Token]
        by_name: dict[str, SecretStr] | None = None
        plain: str = ""

    assert secure.secret_patterns(Model) == (
        ("tokens", secure.ANY, "value"),
        ("by_name", secure.ANY),
    )


@pytest.mark.parametrize("name", ["staging-kubeconfig", "dev-kubeconfig"])
def test_the_readme_secret_step_validates_as_set(name: str) -> None:
    raw = parse_document(fixture(name), name)["config"]
    config = secure.load_stack_config(
        {k.split(":", 1)[1]: v for k, v in raw.items() if k.startswith("gpu-queues:")}
    )
    assert config.kubernetes.kubeconfig is not None
    assert config.kubernetes.kubeconfig.get_secret_value() == secure.PLACEHOLDER


def _project(tmp_path: Path, **files: str) -> Path:
    for stack, text in files.items():
        (tmp_path / f"Pulumi.{stack}.yaml").write_text(text)
    return tmp_path


def test_quota_diff_reads_a_stack_holding_the_kubeconfig_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 10 A1: "kubernetes.kubeconfig: Input should be a valid string" before.
    project = _project(
        tmp_path,
        staging=fixture("staging-kubeconfig"),
        committed=(ROOT / "Pulumi.staging.yaml").read_text(),
    )
    assert quota_diff.main(["committed", "staging", "--root", str(project)]) == 0
    out = capsys.readouterr()
    assert "No quota changes." in out.out
    for text in ciphertexts(fixture("staging-kubeconfig")):
        assert text not in out.out + out.err


def test_promotion_into_a_stack_with_secrets_carries_them_untouched(tmp_path: Path) -> None:
    text = fixture("staging-kubeconfig")
    source = (
        (ROOT / "Pulumi.staging.yaml")
        .read_text()
        .replace(
            "    manager:\n",
            "    manager:\n      featureGates: {TopologyAwareScheduling: true}\n",
            1,
        )
    )
    project = _project(tmp_path, staging=source, prod=text)
    result = promote.promote("staging", "prod", {"kueueVersion": _version(source)}, project)
    after = (project / "Pulumi.prod.yaml").read_text()
    assert not result.noop
    assert ciphertexts(after) == ciphertexts(text)  # salt and secret, byte for byte
    assert after.replace("      featureGates: {TopologyAwareScheduling: true}\n", "") == text
    assert all(c not in result.diff() for c in ciphertexts(text))


def _version(text: str) -> str:
    from gpu_queues.pins import kueue_version

    match = re.search(r"^    version: (\S+)", text, re.M)
    return match[1] if match else kueue_version()


def test_secrets_in_other_namespaces_are_ignored_but_kept(tmp_path: Path) -> None:
    doc = parse_document(fixture("secrets-everywhere"), "x")
    assert isinstance(doc["config"]["kubernetes:kubeconfig"], Secure)
    assert isinstance(doc["config"]["other-project:token"], Secure)
    raw = config_of(doc)
    assert isinstance(raw["kubernetes"]["kubeconfig"], Secure)
    assert not any(k.startswith(("kubernetes:", "other-project:")) for k in raw)
    # another project's or the provider's secrets never stop the tools
    text = fixture("staging-kubeconfig").replace(
        "encryptionsalt:", "  kubernetes:kubeconfig:\n    secure: v1:AAAA:BBBB\nencryptionsalt:"
    )
    assert read_config("s", _project(tmp_path, s=text))["kubernetes"] == {
        "kubeconfig": secure.PLACEHOLDER
    }


@pytest.mark.parametrize(
    ("name", "key", "says"),
    [
        (
            "secret-quota",
            "gpu-queues:teams[1].resourceGroups[0].flavors[0].resources['nvidia.com/gpu']"
            ".nominalQuota",
            "only gpu-queues:kubernetes.kubeconfig, gpu-queues:multiKueue.manager.workers"
            ".kubeconfig (and the same key in every item) may be one",
        ),
        ("secrets-everywhere", "gpu-queues:teams[0].submitters[0].name", "is a secret"),
        ("secret-in-kueue-block", "gpu-queues:kueue.manifest.url", "is a secret"),
        ("kubeconfig-without-path", "gpu-queues:['kubernetes.kubeconfig']", "without --path"),
        ("whole-object-secret", "gpu-queues:kubernetes", "one encrypted value"),
    ],
)
def test_a_secret_where_the_tools_need_the_value_is_refused_by_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, key: str, says: str
) -> None:
    text = fixture(name)
    project = _project(tmp_path, bad=text, good=(ROOT / "Pulumi.dev.yaml").read_text())
    with pytest.raises(StackFileError, match=re.escape(key)):
        read_config("bad", project)  # what quota_diff, the sandbox and the tests read
    with pytest.raises(ConfigError) as caught:
        secure.load_stack_config(config_of(parse_document(text, "bad")))
    (problem,) = [p for p in caught.value.problems if p.path == key]
    assert says in problem.message
    # one message per secret, not the models' type errors for it
    assert not any(p.path.startswith(key) and p is not problem for p in caught.value.problems)

    assert quota_diff.main(["good", "bad", "--root", str(project)]) == 2
    (project / "outputs.json").write_text('{"kueueVersion": "v0.18.3"}')
    outputs = str(project / "outputs.json")
    assert promote.main(["good", "bad", "--root", str(project), "--outputs", outputs]) == 1
    out = capsys.readouterr()
    assert key in out.err
    for secret in ciphertexts(text):
        assert secret not in out.out + out.err
    assert (project / "Pulumi.bad.yaml").read_text() == text


def test_a_secret_value_is_never_promoted_between_stacks(
    write: Write, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even if a model one day allowed a secret under a travelling key, its ciphertext belongs
    # to the source stack's key and is never copied.
    from gpu_queues.config.model import StackConfig

    monkeypatch.setattr(
        secure,
        "secret_patterns",
        lambda model=StackConfig: (("kueue", "manager", "integrations", "frameworks", secure.ANY),),
    )
    # ... and the integration-name check, which would otherwise refuse the placeholder.
    from gpu_queues.config import checks as config_checks

    monkeypatch.setattr(config_checks.kueue_versions, "framework_problems", lambda *_: [])
    frameworks = "[batch/job, {secure: 'v1:AAAA:BBBB'}]"
    dev = "config:\n  gpu-queues:kueue:\n    manager:\n      integrations:\n"
    dev += f"        frameworks: {frameworks}\n"
    write("dev", dev)
    target = write("staging", "config:\n  gpu-queues:kueue:\n    install: false\n")
    with pytest.raises(promote.PromotionError, match="holds a secret"):
        promote.promote("dev", "staging", {"kueueVersion": "v0.18.3"}, project)
    assert target.read_text() == "config:\n  gpu-queues:kueue:\n    install: false\n"


def test_the_saved_cli_fixtures_have_the_shapes_the_unit_tests_rely_on() -> None:
    # This checks the saved files only, not where they came from: the toolchain test
    # (tests/unit/config/test_stackfile_cli.py, test_a_fresh_capture_has_the_shapes_the_unit_tests_
    # rely_on) runs the real CLI on every scenario and checks the same shapes on what it
    # writes. Here: one saved file per scenario tests/unit/config/pulumi_fixtures.py captures (none
    # written by hand, none missing), each with those shapes.
    saved = {p.stem: p.read_text() for p in CLI.glob("*.yaml")}
    assert sorted(saved) == sorted(pulumi_fixtures.SCENARIOS)
    check_cli_shapes(saved)


def check_cli_shapes(files: dict[str, str]) -> None:
    staging = parse_document(files["staging-kubeconfig"], "x")
    assert set(staging) == {"config", "encryptionsalt"}
    assert isinstance(staging["config"]["gpu-queues:kubernetes"]["kubeconfig"], Secure)
    assert list(staging)[-1] == "encryptionsalt"  # appended to an existing file
    fresh = parse_document(files["fresh"], "x")
    assert list(fresh) == ["encryptionsalt", "config"]  # first in a file Pulumi creates
    quota = parse_document(files["secret-quota"], "x")["config"]["gpu-queues:teams"]
    gpu = quota[1]["resourceGroups"][0]["flavors"][0]["resources"]["nvidia.com/gpu"]
    assert isinstance(gpu["nominalQuota"], Secure)
    everywhere = parse_document(files["secrets-everywhere"], "x")["config"]
    assert isinstance(everywhere["gpu-queues:teams"][0]["submitters"][0]["name"], Secure)
    assert isinstance(everywhere["kubernetes:kubeconfig"], Secure)
    assert isinstance(
        parse_document(files["kubeconfig-without-path"], "x")["config"][
            "gpu-queues:kubernetes.kubeconfig"
        ],
        Secure,
    )
    assert isinstance(
        parse_document(files["whole-object-secret"], "x")["config"]["gpu-queues:kubernetes"],
        Secure,
    )
    block = parse_document(files["secret-in-kueue-block"], "x")["config"]["gpu-queues:kueue"]
    assert isinstance(block["manifest"]["url"], Secure)


def checkout_secrets(root: Path) -> list[str]:
    """Stack files staged in `root`'s git index (the working tree outside git) that hold a
    checkout's secrets salt or secure values."""
    listed = subprocess.run(
        ["git", "ls-files", "--", "Pulumi.*.yaml"], cwd=root, capture_output=True, text=True
    )
    if listed.returncode == 0:
        texts = {
            name: subprocess.run(
                ["git", "show", f":{name}"], cwd=root, capture_output=True, text=True, check=True
            ).stdout
            for name in listed.stdout.split()
        }
    else:
        texts = {p.name: p.read_text() for p in root.glob("Pulumi.*.yaml")}
    found = []
    for name, text in sorted(texts.items()):
        doc = parse_document(text, name)
        found += [f"{name}: {key}" for key in ("encryptionsalt", "encryptedkey") if key in doc]
        found += [
            f"{name}: a secure value at {'.'.join(map(str, loc))}"
            for loc, _ in secure.find_secure(doc.get("config") or {})
        ]
    return found


def test_committed_stack_files_hold_no_checkout_secrets() -> None:
    # The README's steps write a salt and the encrypted kubeconfig into Pulumi.<stack>.yaml,
    # under this checkout's passphrase; committed, they would break CI ("incorrect
    # passphrase"), which has its own passphrase and reads kubeconfigs from its secrets.
    assert checkout_secrets(ROOT) == [], "restore them: git checkout Pulumi.<stack>.yaml"


def test_a_staged_salt_or_secret_is_found(repo: Path, write: Write) -> None:
    write("dev", "config:\n  gpu-queues:kueue: {install: false}\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    assert checkout_secrets(repo) == []
    write("dev", fixture("dev-kubeconfig"))
    assert checkout_secrets(repo) == []  # not staged: a deployment from this checkout
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    assert checkout_secrets(repo) == [
        "Pulumi.dev.yaml: encryptionsalt",
        "Pulumi.dev.yaml: a secure value at gpu-queues:kubernetes.kubeconfig",
    ]


def test_a_key_without_a_namespace_is_the_project_s_own_as_pulumi_reads_it() -> None:
    # The Pulumi CLI (v3.274, `pulumi config --json`) reads `flavors:` in Pulumi.<stack>.yaml
    # as gpu-queues:flavors; the tools read the same stack, not an empty one.
    doc = parse_document(
        "config:\n  flavors: [{name: a}]\n  gpu-queues:cohort: {name: c}\n"
        "  kubernetes:context: k\n",
        "x",
    )
    assert config_of(doc) == {"flavors": [{"name": "a"}], "cohort": {"name": "c"}}
    both = parse_document("config:\n  teams: []\n  gpu-queues:teams: []\n", "x")
    with pytest.raises(StackFileError, match=r"'teams' and 'gpu-queues:teams' are one key"):
        config_of(both)
