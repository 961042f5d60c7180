"""Capacity on demand in the stack config (gpu-queues:provisioning): what load_config refuses,
each problem at the key the user wrote, and what the program registers for a valid stack,
compared with hand-written objects in Kueue's v1beta2 shape."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.model import ConfigError, load_config
from tests.builders import Stack, Team
from tests.conftest import run_stack

pytestmark = pytest.mark.unit

CLASS = "check-capacity.autoscaling.x-k8s.io"


def team(name: str = "ml", namespace: str = "team-ml") -> dict[str, Any]:
    return (
        Team(name)
        .namespace(namespace)
        .local_queue(f"{name}-queue")
        .quota("gpu", cpu=8, memory="64Gi", gpu=4)
        .quota("spot", cpu=8, memory="64Gi", gpu=4)
        .raw()
    )


def stack(provisioning: Any, teams: list[dict[str, Any]] | None = None, **extra: Any) -> dict:
    built = Stack().kueue(install=False).flavor("gpu", "spot", "elsewhere")
    built.team(*(teams if teams is not None else [team()])).set("provisioning", provisioning)
    for key, value in extra.items():
        built.set(key, value)
    return built.raw()


def on_demand(**check: Any) -> dict[str, Any]:
    return {
        "checks": [{"name": "autoscale", "provisioningClassName": CLASS, **check}],
        "teams": [{"name": "ml", "checks": [{"name": "autoscale", "onFlavors": ["spot"]}]}],
    }


def problems(raw: dict[str, Any]) -> list[str]:
    try:
        load_config(raw)
    except ConfigError as error:
        return error.messages
    return []


def test_a_check_on_one_flavor_of_a_team_is_valid() -> None:
    config = load_config(stack(on_demand()))
    assert config.provisioning is not None
    assert [c.name for c in config.provisioning.checks] == ["autoscale"]


def test_a_check_no_team_uses_is_refused() -> None:
    raw = on_demand()
    raw["checks"].append({"name": "idle", "provisioningClassName": CLASS})
    assert problems(stack(raw)) == [
        "gpu-queues:provisioning.checks[1].name: no team uses provisioning check 'idle', so it "
        "would hold no workload: list it under provisioning.teams[].checks, or remove it"
    ]


def test_a_check_on_a_flavor_outside_the_teams_quota_is_refused() -> None:
    raw = on_demand()
    raw["teams"][0]["checks"][0]["onFlavors"] = ["spot", "elsewhere", "nowhere"]
    assert problems(stack(raw)) == [
        "gpu-queues:provisioning.teams[0].checks[0].onFlavors[1]: onFlavors names flavor "
        "'elsewhere', which is not in the queue's quota (its flavors: gpu, spot), so Kueue "
        "refuses the ClusterQueue; name a flavor the team has quota in",
        "gpu-queues:provisioning.teams[0].checks[0].onFlavors[2]: onFlavors names flavor "
        "'nowhere', which is not in the queue's quota (its flavors: gpu, spot), so Kueue "
        "refuses the ClusterQueue; name a flavor the team has quota in",
    ]


def test_an_unknown_check_and_an_unknown_team_are_named() -> None:
    raw = on_demand()
    raw["teams"][0]["checks"].append({"name": "ghost"})
    raw["teams"].append({"name": "nobody", "checks": [{"name": "autoscale"}]})
    assert problems(stack(raw)) == [
        "gpu-queues:provisioning.teams[0].checks[1].name: admission check 'ghost' is not "
        "declared (declared: autoscale), so Kueue would mark the queue inactive "
        "(AdmissionCheckNotFound) and admit nothing; declare it under provisioning.checks, or "
        "fix the name",
        "gpu-queues:provisioning.teams[1].name: team 'nobody' is not declared under teams "
        "(declared: ml)",
    ]


def test_a_check_listed_twice_for_a_team_and_a_check_declared_twice_are_refused() -> None:
    raw = on_demand()
    raw["teams"][0]["checks"].append({"name": "autoscale"})
    raw["checks"].append({"name": "autoscale", "provisioningClassName": CLASS})
    assert problems(stack(raw)) == [
        "gpu-queues:provisioning.teams[0].checks[1].name: admission check 'autoscale' is already "
        "admissionChecks[0]; list each admission check once",
        "gpu-queues:provisioning.checks[1].name: provisioning check 'autoscale' is already at "
        "gpu-queues:provisioning.checks[0].name",
    ]


def test_a_team_listed_twice_is_refused() -> None:
    raw = on_demand()
    raw["teams"].append(copy.deepcopy(raw["teams"][0]))
    assert (
        "gpu-queues:provisioning.teams[1].name: team 'ml' is already at "
        "gpu-queues:provisioning.teams[0].name"
    ) in problems(stack(raw))


def test_a_dispatching_multikueue_team_cannot_also_use_a_provisioning_check() -> None:
    raw = stack(
        on_demand(),
        multiKueue={
            "manager": {
                "workers": [{"name": "east", "stack": "gpu-east"}],
                "teams": [{"name": "ml"}],
            }
        },
    )
    assert problems(raw) == [
        "gpu-queues:provisioning.teams[0].checks[0].name: provisioning admission check "
        "'autoscale' is on a queue that dispatches through MultiKueue (multikueue-ml); Kueue "
        "cannot use both MultiKueue and ProvisioningRequest AdmissionChecks together and would "
        "mark the queue inactive; put the provisioning check on the worker clusters' stacks, "
        "where the jobs run"
    ]


def test_a_check_named_like_a_multikueue_check_is_refused() -> None:
    raw = stack(
        {
            "checks": [{"name": "multikueue-ml", "provisioningClassName": CLASS}],
            "teams": [{"name": "research", "checks": [{"name": "multikueue-ml"}]}],
        },
        teams=[team(), team("research", "team-research")],
        multiKueue={
            "manager": {
                "workers": [{"name": "east", "stack": "gpu-east"}],
                "teams": [{"name": "ml"}],
            }
        },
    )
    assert (
        "gpu-queues:provisioning.checks[0].name: AdmissionCheck 'multikueue-ml' is already the "
        "MultiKueue check of a dispatching team (multiKueue.manager.teams); AdmissionCheck names "
        "are cluster-wide: pick another name"
    ) in problems(raw)


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        (
            {"retryStrategy": {"backoffBaseSeconds": 60, "backoffMaxSeconds": 30}},
            "gpu-queues:provisioning.checks[0].retryStrategy: backoffMaxSeconds (30) is below "
            "backoffBaseSeconds (60): every wait would be cut to the maximum; raise it or lower "
            "the base",
        ),
        (
            {"retryStrategy": {"backoffLimitCount": -1}},
            "gpu-queues:provisioning.checks[0].retryStrategy.backoffLimitCount: Input should be "
            "greater than or equal to 0",
        ),
        ({"retryStrateg": {}}, "gpu-queues:provisioning.checks[0].retryStrateg: unknown key"),
        (
            {"provisioningClassName": "Check Capacity"},
            "gpu-queues:provisioning.checks[0].provisioningClassName:",
        ),
    ],
)
def test_bad_check_fields_are_named_by_key_path(check: dict[str, Any], expected: str) -> None:
    found = problems(stack(on_demand(**check)))
    assert any(p.startswith(expected) for p in found), found


def test_the_program_registers_the_objects_kueue_documents() -> None:
    retry = {"backoffLimitCount": 1, "backoffBaseSeconds": 5, "backoffMaxSeconds": 60}
    raw = stack(on_demand(managedResources=["nvidia.com/gpu"], retryStrategy=retry))
    run = run_stack(load_config(raw), None)
    labels = {"app.kubernetes.io/managed-by": "gpu-queues"}
    assert run.one("ProvisioningRequestConfig", "autoscale").inputs == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "autoscale", "labels": labels},
        "spec": {
            "provisioningClassName": CLASS,
            "managedResources": ["nvidia.com/gpu"],
            "retryStrategy": retry,
        },
    }
    assert run.one("AdmissionCheck", "autoscale").inputs == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "autoscale", "labels": labels},
        "spec": {
            "controllerName": "kueue.x-k8s.io/provisioning-request",
            "parameters": {
                "apiGroup": "kueue.x-k8s.io",
                "kind": "ProvisioningRequestConfig",
                "name": "autoscale",
            },
        },
    }
    cq = run.one("ClusterQueue", "ml-cq").inputs
    assert cq["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "autoscale", "onFlavors": ["spot"]}]
    }
    assert run.outputs[keys.OUT_PROVISIONING] == {"ml": ["autoscale"]}


def test_a_check_without_on_flavors_runs_for_the_whole_queue() -> None:
    raw = on_demand()
    del raw["teams"][0]["checks"][0]["onFlavors"]
    cq = render.cluster_queue(team(), render.admission_checks_of(stack(raw), "ml"))
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "autoscale"}]}


def test_a_stack_without_provisioning_registers_nothing_of_it() -> None:
    raw = stack(None)
    del raw["provisioning"]
    run = run_stack(load_config(raw), None)
    assert run.of_kind("ProvisioningRequestConfig") == []
    assert "admissionChecksStrategy" not in run.one("ClusterQueue", "ml-cq").inputs["spec"]
    assert keys.OUT_PROVISIONING not in run.outputs


def test_the_longest_wait_may_equal_the_first_but_not_be_below_it() -> None:
    same = {"backoffBaseSeconds": 60, "backoffMaxSeconds": 60}
    assert problems(stack(on_demand(retryStrategy=same))) == []
    below = {"backoffBaseSeconds": 60, "backoffMaxSeconds": 59}
    assert problems(stack(on_demand(retryStrategy=below))) == [
        "gpu-queues:provisioning.checks[0].retryStrategy: backoffMaxSeconds (59) is below "
        "backoffBaseSeconds (60): every wait would be cut to the maximum; raise it or lower the "
        "base"
    ]
