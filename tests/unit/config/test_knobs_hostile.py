"""The controller knobs of issue 24 (kueue.controller.imageRegistry, priorityClassName,
imagePullSecrets) under attack, and names that end in a line break: each refused naming the
key, before any resource is registered (the same harness as test_config_hostile.py); the
near misses a platform team really writes are accepted as written.
"""

from __future__ import annotations

import copy

import pytest

from gpu_queues.config.model import load_config
from tests.conftest import stack_raw
from tests.unit.config.test_config_hostile import (
    Case,
    _run_program,
    edit,
    one,
)

pytestmark = pytest.mark.unit

MIRROR = "kueue.controller.imageRegistry"
PRIORITY = "kueue.controller.priorityClassName"
PULL = "kueue.controller.imagePullSecrets"
NOT_A_REGISTRY = "is not an image registry"

# Python's `$` matches before a final line break: "team-a\n" passed every name check.
LINE_BREAKS = [
    one("newline-namespace", "teams[0].namespace", "team-research\n", "not a valid Kubernetes"),
    one("newline-version", "kueue.version", "v0.18.3\n", "vX.Y.Z"),
    one("newline-sha256", "kueue.manifest.sha256", "0" * 64 + "\n", "64 lowercase hex"),
    one("newline-flavor", "flavors[0].name", "h100\n", "not a valid Kubernetes"),
    one(
        "newline-label-value", "flavors[0].nodeLabels['nvidia.com/gpu.product']", "h100\n", "label"
    ),
    one("newline-feature-gate", "kueue.manager.featureGates", {"Tas\n": True}, "feature gate"),
]

MIRRORS = [
    one(f"mirror-{name}", MIRROR, value, says)
    for name, value, says in [
        ("digest", "mirror.example/kueue/kueue@sha256:" + "0" * 64, "tag or digest"),
        ("at-sign", "mirror.example@evil.example", "tag or digest"),
        ("tag", "mirror.example/kueue:v0.19.2", "tag or digest"),
        ("dotdot", "mirror.example/../evil", NOT_A_REGISTRY),
        ("dotdot-host", "mirror..example", NOT_A_REGISTRY),
        ("scheme", "https://mirror.example", "no scheme"),
        ("no-host", "kueue", "registry host"),
        ("docker-hub-path", "attacker/kueue", "registry host"),
        ("trailing-slash", "mirror.example/", NOT_A_REGISTRY),
        ("upper-path", "mirror.example/Kueue", NOT_A_REGISTRY),
        ("space", "mirror.example /x", NOT_A_REGISTRY),
        ("newline", "mirror.example\n", NOT_A_REGISTRY),
        ("cyrillic-e", "mirror.\u0435xample", NOT_A_REGISTRY),  # a look-alike 'e'
        ("fullwidth-dot", "mirror\uff0eexample", NOT_A_REGISTRY),
        ("port-not-number", "mirror.example:x1/k", NOT_A_REGISTRY),
        ("port-too-big", "mirror.example:99999", "port"),
        ("empty", "", NOT_A_REGISTRY),
        ("huge", "m." + "a" * 300 + ".example", "at most"),
        ("not-a-string", 5, "string"),
    ]
]

PRIORITIES = [
    one("priority-node-critical", PRIORITY, "system-node-critical", "system-"),
    one("priority-cluster-critical", PRIORITY, "system-cluster-critical", "system-"),
    one("priority-system-prefix", PRIORITY, "system-mine", "system-"),
    one("priority-not-a-name", PRIORITY, "High_Priority", "not a valid Kubernetes object name"),
    one("priority-newline", PRIORITY, "high\n", "not a valid Kubernetes object name"),
]

PULL_SECRETS = [
    one("pull-other-namespace", PULL, ["kube-system/regcred"], "not a valid Kubernetes object"),
    one("pull-cert-secret", PULL, ["kueue-webhook-server-cert"], "webhook"),
    one("pull-twice", PULL, ["regcred", "regcred"], "twice"),
    # the program's own Secrets in kueue-system: a pod naming a Secret lets its node read it
    one("pull-worker-kubeconfig", PULL, ["multikueue-worker-a"], "the program's own"),
    one("pull-manager-token", PULL, ["multikueue-manager-token"], "the program's own"),
    one("pull-many", PULL, [f"s{i}" for i in range(9)], "at most 8"),
    one("pull-empty-name", PULL, [""], "not a valid Kubernetes object"),
    one("pull-object-not-name", PULL, [{"name": "regcred"}], "string"),
]

# Kueue's Configuration keeps these as int32: a larger number would stop its manager starting.
REQUEUE = "kueue.manager.waitForPodsReady"
BACKOFFS = [
    one(f"backoff-{key}-over-int32", REQUEUE,
        {"timeout": "5m", "requeuingStrategy": {key: 2**31}}, "less than or equal to 2147483647")
    for key in ("backoffBaseSeconds", "backoffMaxSeconds", "backoffLimitCount")
]  # fmt: skip

CASES = [*LINE_BREAKS, *MIRRORS, *PRIORITIES, *PULL_SECRETS, *BACKOFFS]


@pytest.mark.parametrize("hostile", CASES, ids=lambda c: c.id)
def test_hostile_knob_is_refused_naming_the_key_before_any_resource(hostile: Case, capsys):
    from gpu_queues.config.model import ConfigError

    raw = hostile.raw()
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    here = [p.message for p in info.value.problems if p.path.startswith(f"gpu-queues:{hostile.at}")]
    assert here, f"nothing at {hostile.at}: {info.value.messages}"
    assert any(hostile.says in m for m in here), here
    code, run = _run_program(raw)
    assert code == 32
    assert run.resources == []
    assert f"gpu-queues:{hostile.at}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (MIRROR, "registry.corp.example"),
        (MIRROR, "registry.corp.example:5000/mirrors/k8s"),
        (MIRROR, "localhost:5000"),
        (MIRROR, "10.0.0.5:5000/k8s.io"),
        (MIRROR, "registry.k8s.io"),  # the release's own registry: a no-op
        (PRIORITY, "platform-critical"),
        (PULL, ["regcred", "mirror-pull.2"]),
    ],
)
def test_knobs_a_platform_team_writes_are_accepted_as_written(path, value):
    raw = copy.deepcopy(stack_raw("prod"))
    edit(raw, path, value)
    held = load_config(raw).model_dump(by_alias=True, exclude_none=True)
    node = held
    for part in path.split("."):
        node = node[part]
    assert node == value


def test_the_refused_pull_secret_prefix_covers_every_secret_the_program_makes() -> None:
    from gpu_queues.components.multikueue import MANAGER_TOKEN
    from gpu_queues.config.model import PROGRAM_SECRET_PREFIX
    from gpu_queues.config.render import kubeconfig_secret_name

    assert MANAGER_TOKEN.startswith(PROGRAM_SECRET_PREFIX)
    assert kubeconfig_secret_name("worker-a").startswith(PROGRAM_SECRET_PREFIX)
