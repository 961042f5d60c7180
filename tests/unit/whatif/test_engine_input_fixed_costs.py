"""What every replay process paid before its engine ran, paid once: the stack's Kueue manifest
read once per process for both the manager Configuration and the controller's pods, and the
release's CRDs read from YAML once per machine, then from a JSON copy in the user's cache
without the go command (docs/what-if.md, Speed: `status --eta`'s fixed costs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpu_queues.config.model import load_config
from gpu_queues.config.stackfile import read_config
from gpu_queues.release.module import RenderError
from gpu_queues.whatif import engine_input

pytestmark = pytest.mark.unit


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv(engine_input.CACHE_ENV, str(tmp_path))
    engine_input.release_crds.cache_clear()
    yield tmp_path
    engine_input.release_crds.cache_clear()


def test_the_manifest_is_read_once_for_the_configuration_and_the_controller_pods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = load_config(read_config("prod"))
    reads: list[Any] = []
    real = engine_input.load_release

    def counted(*args: Any, **kw: Any) -> Any:
        reads.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(engine_input, "load_release", counted)
    monkeypatch.setattr(engine_input, "_RELEASES", {})
    monkeypatch.setattr(engine_input, "_CONTROLLER_PODS", {})
    configuration = engine_input.manager_configuration(config)
    pods = engine_input.controller_pods(config)
    assert engine_input.manager_configuration(config) == configuration
    assert len(reads) == 1
    assert "apiVersion: config.kueue.x-k8s.io" in configuration and pods


def test_the_crds_come_from_the_cache_without_the_go_command_once_read(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = load_config(read_config("prod")).kueue.version
    first = engine_input.release_crds(version)
    assert {d["kind"] for d in first} == {"CustomResourceDefinition"}
    assert engine_input.crds_cache(version) == next((cache / "whatif").glob("crds-*.json"))

    def no_go(*args: Any, **kw: Any) -> Path:
        raise RenderError("the go command was asked")

    monkeypatch.setattr(engine_input, "module_dir", no_go)
    engine_input.release_crds.cache_clear()  # another process
    assert engine_input.release_crds(version) == first


def test_a_damaged_cache_is_read_again_from_the_module(cache: Path) -> None:
    version = load_config(read_config("prod")).kueue.version
    path = engine_input.crds_cache(version)
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_text('{"kind": "not a list"', encoding="utf-8")
    crds = engine_input.release_crds(version)
    assert crds and {d["kind"] for d in crds} == {"CustomResourceDefinition"}
    engine_input.release_crds.cache_clear()
    assert engine_input.release_crds(version) == crds  # and written again whole
