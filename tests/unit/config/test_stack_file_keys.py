"""A stack file key without a namespace is the project's own (`kueue:` is `gpu-queues:kueue`),
as the Pulumi CLI reads it. Every tool that reads or edits one key of a raw stack file must
treat the two forms alike: each test runs a tool on a committed stack file as written and on
the same file with its keys bare, and requires the bare run to be the prefixed run with its
keys bare (the edit lands in the key the file already has, no second key is added)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues import keys
from gpu_queues.advise import advice
from gpu_queues.advise.space import Space
from gpu_queues.config.model import load_config
from gpu_queues.config.multikueue_checks import stack_file_problems
from gpu_queues.config.secure import load_stack_config
from gpu_queues.config.stackfile import config_of, parse_config, parse_document
from gpu_queues.release.pin import pin_text
from gpu_queues.tools import promote
from gpu_queues.whatif import sides as whatif
from sandbox.rehearse.deploy import sandbox_stack_file
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

_TOP_KEY = re.compile(rf"^  {keys.PROJECT}:", re.M)


def bare(text: str) -> str:
    """The stack file with every top-level `gpu-queues:` key written without its namespace."""
    return _TOP_KEY.sub("  ", text)


def bare_keys(config: dict[str, Any]) -> dict[str, Any]:
    return {k.removeprefix(f"{keys.PROJECT}:"): v for k, v in config.items()}


def test_the_key_a_file_uses_is_the_one_it_holds() -> None:
    assert keys.stack_file_key({"kueue": {}}, "kueue") == "kueue"
    assert keys.stack_file_key({"gpu-queues:kueue": {}}, "kueue") == "gpu-queues:kueue"
    # A key the file lacks is written in the namespaced form; so is one it holds both ways
    # (config_of refuses that file).
    assert keys.stack_file_key({}, "kueue") == "gpu-queues:kueue"
    assert keys.stack_file_key(None, "kueue") == "gpu-queues:kueue"
    both = {"kueue": {}, "gpu-queues:kueue": {}}
    assert keys.stack_file_key(both, "kueue") == "gpu-queues:kueue"
    # Another namespace's key of the same name is not ours.
    assert keys.stack_file_key({"kubernetes:kueue": 1}, "kueue") == "gpu-queues:kueue"


@pytest.mark.parametrize("stack", ["dev", "local", "staging", "prod"])
def test_the_bare_test_files_read_as_the_committed_ones(stack: str) -> None:
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    assert _TOP_KEY.search(text), "the transformation must change something"
    assert config_of(parse_document(bare(text), "x")) == config_of(parse_document(text, "x"))


@pytest.mark.parametrize("stack", ["dev", "local", "staging", "prod"])
def test_pin_edits_the_kueue_key_the_file_has(stack: str) -> None:
    text = (ROOT / f"Pulumi.{stack}.yaml").read_text()
    source, digest = {"path": ".kueue/v0.18.4/manifests.yaml"}, "cd" * 32
    pinned = pin_text(text, source, digest, stack)
    assert pinned != text
    assert pin_text(bare(text), source, digest, stack) == bare(pinned)


def test_promote_edits_the_kueue_key_each_file_has(tmp_path: Path) -> None:
    outputs = {"kueueVersion": "v0.18.3"}
    runs = {}
    # A change made in dev, to travel to staging.
    dev = (ROOT / "Pulumi.dev.yaml").read_text()
    kueue = f"  {keys.PROJECT}:kueue:\n"
    assert kueue in dev
    dev = dev.replace(
        kueue, f"{kueue}    manager:\n      featureGates: {{PartialAdmission: true}}\n"
    )
    texts = {"dev": dev, "staging": (ROOT / "Pulumi.staging.yaml").read_text()}
    for name, form in (("prefixed", str), ("bare", bare)):
        root = tmp_path / name
        root.mkdir()
        for stack, text in texts.items():
            (root / f"Pulumi.{stack}.yaml").write_text(form(text))
        (root / "outputs.json").write_text(json.dumps(outputs))
        args = ["dev", "staging", "--root", str(root), "--outputs", str(root / "outputs.json")]
        assert promote.main(args) == 0, name
        runs[name] = (root / "Pulumi.staging.yaml").read_text()
    assert runs["prefixed"] != texts["staging"], "the promotion must change staging"
    assert runs["bare"] == bare(runs["prefixed"])
    load_stack_config(config_of(parse_document(runs["bare"], "Pulumi.staging.yaml")))


def test_a_plain_text_kubeconfig_under_a_bare_key_is_refused() -> None:
    worker = {"name": "east", "kubeconfig": "apiVersion: v1\n"}
    block = {"manager": {"workers": [worker], "teams": [{"name": "ml"}]}}
    for key in (f"{keys.PROJECT}:{keys.KEY_MULTI_KUEUE}", keys.KEY_MULTI_KUEUE):
        text = yaml.safe_dump({"config": {key: block}})
        [problem] = stack_file_problems(text, "Pulumi.mgr.yaml")
        assert "is plain text in Pulumi.mgr.yaml" in problem.message, key


def test_the_what_if_drops_a_bare_connection_and_pins_the_bare_kueue_key() -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.staging.yaml").read_text())
    doc["config"]["gpu-queues:kubernetes"] = {"kubeconfig": {"secure": "v1:xyz"}, "context": "p"}
    doc["config"]["gpu-queues:kueue"].pop("version", None)
    text = yaml.safe_dump(doc, sort_keys=False)
    prefixed, _, notes = whatif.whatif_stack_file("staging", text, "here", "v0.18.4")
    bare_out, _, bare_notes = whatif.whatif_stack_file("staging", bare(text), "here", "v0.18.4")
    expected = bare_keys(yaml.safe_load(prefixed)["config"])
    assert "kubernetes" not in expected and expected["kueue"]["version"] == "v0.18.4"
    assert yaml.safe_load(bare_out)["config"] == expected
    assert bare_notes == notes


def test_the_rehearsal_replaces_a_bare_connection_and_manifest(tmp_path: Path) -> None:
    doc = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    doc["config"]["gpu-queues:kubernetes"] = {"context": "prod-cluster"}
    doc["config"]["gpu-queues:kueue"]["manifest"] = {
        "url": "https://mirror.example.invalid/kueue/manifests.yaml",
        "sha256": "0" * 64,
    }
    text = yaml.safe_dump(doc, sort_keys=False)
    rendered = tmp_path / "manifests.yaml"
    rendered.write_text("kind: List\n")
    written = {}
    for name, form in (("prefixed", str), ("bare", bare)):
        source = tmp_path / name / "Pulumi.prod.yaml"
        source.parent.mkdir()
        source.write_text(form(text))
        cfg = load_stack_config(config_of(parse_document(source.read_text(), "prod")))
        out, notes = sandbox_stack_file("prod", source, cfg, tmp_path / name / "out", rendered)
        written[name] = (yaml.safe_load(out.read_text())["config"], notes)
    config, notes = written["prefixed"]
    assert "gpu-queues:kubernetes" not in config
    assert config["gpu-queues:kueue"]["manifest"] == {
        "path": str(rendered),
        "sha256": hashlib.sha256(rendered.read_bytes()).hexdigest(),
    }
    assert written["bare"] == (bare_keys(config), notes)


def test_the_tests_here_use_the_committed_files_unchanged() -> None:
    # The transformation is of text the tests above read from the repository; a stack file
    # that held a bare key already would make the prefixed run a bare one.
    for path in sorted(ROOT.glob("Pulumi.*.yaml")):
        if path.name == "Pulumi.yaml":
            continue
        config = yaml.safe_load(path.read_text()).get("config") or {}
        assert all(":" in k for k in config), path.name


def test_the_advisor_writes_its_proposal_into_the_bare_teams_key() -> None:
    text = (ROOT / "Pulumi.prod.yaml").read_text()
    raw = parse_config(text, "Pulumi.prod.yaml")
    space = Space.of(raw, load_config(raw))
    settings = list(space.start.settings)
    settings[0] = (24, 8, 8)  # research h100: 8 more
    candidate = replace(space.start, settings=tuple(settings))
    proposal = advice.proposal_text(text, "Pulumi.prod.yaml", space, candidate)
    assert proposal != text
    assert advice.proposal_text(bare(text), "Pulumi.prod.yaml", space, candidate) == bare(proposal)
