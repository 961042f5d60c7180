"""The fast engine's input for an organisation (docs/examples/organisation): the objects the
program renders pass through as rendered (the Cohort tree, the ClusterQueues' fairSharing,
flavorFungibility, stopPolicy and admissionScope, every LocalQueue), and every namespace a
team owns exists, so a LocalQueue in a team's second namespace has one."""

from __future__ import annotations

import pytest

from gpu_queues.config import render
from gpu_queues.config.model import load_config
from gpu_queues.whatif import engine_input
from tests.unit.config.test_organisation import example

pytestmark = pytest.mark.unit


def test_the_organisation_reaches_the_engine_as_rendered() -> None:
    config = load_config(example())
    assert engine_input.unmodelled(config) is None
    sent = engine_input.engine_input(config, [], "", None)["objects"]
    kueue = [o for o in sent if o["apiVersion"] != "v1"]
    assert kueue == render.kueue_objects(config)
    namespaces = {o["metadata"]["name"] for o in sent if o["kind"] == "Namespace"}
    queues = {o["metadata"]["namespace"] for o in kueue if o["kind"] == "LocalQueue"}
    assert queues <= namespaces
    assert {"llm-train", "llm-eval"} <= namespaces
    eval_ns = next(
        o for o in sent if o["kind"] == "Namespace" and o["metadata"]["name"] == "llm-eval"
    )
    assert eval_ns["metadata"]["labels"]["gpu-queues.dev/team"] == "llm"
