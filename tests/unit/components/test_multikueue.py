"""MultiKueue in the stack config and the program: what a manager and a worker stack declare,
and everything refused before a resource is registered (with generated names and stacks too,
not only the committed sandbox ones)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues import keys
from gpu_queues.components.multikueue import (
    default_origin,
    effective_kueue,
    manager_rules,
    worker_kubeconfig,
)
from gpu_queues.components.validation import multikueue_problems
from gpu_queues.config import render
from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.config.multikueue_checks import (
    kubeconfig_problems,
    stack_file_problems,
)
from gpu_queues.config.schema import build_schema
from gpu_queues.config.stackfile import parse_config
from gpu_queues.config.worker_stacks import worker_stack_problems
from tests.builders import Flavor, Stack, Team
from tests.conftest import TOKEN_SECRET_DATA, WORKER_KUBECONFIG, MockRun, run_stack

pytestmark = pytest.mark.unit

E2E = Path(__file__).resolve().parents[2] / "e2e" / "stacks"
CA = "Q0E="  # base64 of "CA"


def team(name: str = "ml", namespace: str = "team-ml", **extra: Any) -> dict[str, Any]:
    return (
        Team(name)
        .namespace(namespace)
        .local_queue(f"{name}-queue")
        .quota("gpu", cpu=8, memory="64Gi", gpu=4)
        .set(**extra)
        .raw()
    )


def manager_raw(
    workers: list[dict[str, Any]] | None = None,
    teams: list[dict[str, Any]] | None = None,
    mk_teams: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "kueue": {"install": False},
        "flavors": [{"name": "gpu"}],
        "teams": teams if teams is not None else [team()],
        "multiKueue": {
            "manager": {
                "workers": workers
                if workers is not None
                else [{"name": "east", "stack": "gpu-east"}, {"name": "west", "stack": "gpu-west"}],
                "teams": mk_teams if mk_teams is not None else [{"name": "ml"}],
            }
        },
    }


def problems(raw: dict[str, Any]) -> list[str]:
    try:
        load_config(raw)
    except ConfigError as error:
        return error.messages
    return []


def kubeconfig(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None) -> str:
    doc = yaml.safe_load(WORKER_KUBECONFIG)
    doc["clusters"][0]["cluster"].update(cluster or {})
    doc["users"][0]["user"].update(user or {})
    return yaml.safe_dump(doc)


# --- config ---------------------------------------------------------------------------------


def test_a_manager_with_two_workers_and_a_dispatching_team_is_valid() -> None:
    config = load_config(manager_raw())
    assert config.multi_kueue is not None and config.multi_kueue.manager is not None
    assert [w.name for w in config.multi_kueue.manager.workers] == ["east", "west"]


def test_a_cluster_cannot_be_manager_and_worker() -> None:
    raw = manager_raw()
    raw["multiKueue"]["worker"] = {}
    assert any(
        m.startswith("gpu-queues:multiKueue: a cluster is a MultiKueue manager or a worker")
        for m in problems(raw)
    )


def test_worker_names_are_unique_and_each_worker_has_a_kubeconfig_source() -> None:
    raw = manager_raw(workers=[{"name": "east", "stack": "a"}, {"name": "east"}])
    found = problems(raw)
    assert (
        "gpu-queues:multiKueue.manager.workers[1].name: worker 'east' is already at "
        "gpu-queues:multiKueue.manager.workers[0].name" in found
    )
    assert any(
        m.startswith("gpu-queues:multiKueue.manager.workers[1]: a worker needs its kubeconfig")
        for m in found
    )


def test_two_workers_from_one_stack_are_refused() -> None:
    raw = manager_raw(workers=[{"name": "a", "stack": "gpu"}, {"name": "b", "stack": "gpu"}])
    assert any(
        "workers[1].stack: worker stack (one cluster, two workers) 'gpu'" in m
        for m in problems(raw)
    )


@pytest.mark.parametrize("name", ["East", "east_1", "-east", "e" * 64])
def test_worker_names_must_be_valid_kubernetes_names(name: str) -> None:
    raw = manager_raw(workers=[{"name": name, "stack": "gpu-east"}])
    assert any(
        m.startswith("gpu-queues:multiKueue.manager.workers[0].name:") for m in problems(raw)
    )


def test_a_dispatching_team_must_be_a_team_of_the_stack_and_name_declared_workers() -> None:
    raw = manager_raw(mk_teams=[{"name": "vision", "workers": ["east", "north", "east"]}])
    found = problems(raw)
    assert (
        "gpu-queues:multiKueue.manager.teams[0].name: team 'vision' is not declared under "
        "teams (declared: ml)" in found
    )
    assert any("teams[0].workers[1]: worker 'north' is not declared" in m for m in found)
    assert any("teams[0].workers[2]: worker 'east' is already at" in m for m in found)


def test_switching_the_multikueue_gate_off_on_a_manager_is_refused() -> None:
    raw = manager_raw()
    raw["kueue"]["manager"] = {"featureGates": {"MultiKueue": False}}
    assert any(
        m.startswith("gpu-queues:kueue.manager.featureGates.MultiKueue: this stack is a MultiKueue")
        for m in problems(raw)
    )


def test_a_team_name_too_long_for_its_admission_check_parameters_is_named() -> None:
    long_name = "t" * 60  # a valid team name; multikueue-<name> is not a DNS label
    raw = manager_raw(teams=[team(long_name)], mk_teams=[{"name": long_name}])
    found = problems(raw)
    assert any(
        m.startswith("gpu-queues:multiKueue.manager.teams[0].name: AdmissionCheck")
        and "parameters name" in m
        for m in found
    ), found


@pytest.mark.parametrize(
    ("cluster", "user", "reason"),
    [
        ({"insecure-skip-tls-verify": True}, None, "skips TLS verification"),
        ({"certificate-authority": "/etc/ca.crt"}, None, "names its CA by file path"),
        ({"server": "http://10.0.0.2:6443"}, None, "must start with https://"),
        ({"server": "https://bad_host:6443"}, None, "neither an IP address nor a DNS name"),
        ({"server": None}, None, "has no server URL"),
        (None, {"tokenFile": "/var/run/token"}, "a token file (tokenFile)"),
        (None, {"username": "u", "password": "p"}, "basic auth"),
        (None, {"exec": {"command": "aws"}}, "an exec credential plugin"),
        (None, {"auth-provider": {"name": "gcp"}}, "an auth provider"),
        (None, {"client-key": "/home/me/key.pem"}, "a client key file"),
    ],
)
def test_an_inline_kubeconfig_kueue_would_refuse_is_refused_without_showing_it(
    cluster: dict[str, Any] | None, user: dict[str, Any] | None, reason: str, tmp_path: Path
) -> None:
    text = kubeconfig(cluster, user)
    raw = manager_raw(workers=[{"name": "east", "kubeconfig": text}])
    config = load_config(raw)  # the content of a secret is the validation phase's to check
    checked = multikueue_problems(raw, config, tmp_path, None, ["gpu-queues:multiKueue"])
    found = [str(p) for p in checked]
    assert found and all("workers[0].kubeconfig: Kueue would not connect" in m for m in found)
    assert any(reason in m for m in found), found
    assert all("not-a-real-token" not in m and "Q0E=" not in m for m in found)


def test_the_tools_read_a_manager_whose_worker_kubeconfig_is_a_secret() -> None:
    text = stack_file({"secure": "v1:AAAA:BBBB"}).replace(
        "config:\n", "config:\n  gpu-queues:kueue: {install: false}\n", 1
    )
    raw = parse_config(text, "mgr")  # the secret is set, its content unknown to the tools
    raw["teams"] = [team()]
    raw["flavors"] = [{"name": "gpu"}]
    config = load_config(raw)
    assert config.multi_kueue is not None and config.multi_kueue.manager is not None
    (east,) = config.multi_kueue.manager.workers
    assert east.name == "east"
    assert [t.name for t in config.multi_kueue.manager.teams] == ["ml"]


def test_kueue_accepts_the_kubeconfig_a_worker_stack_exports() -> None:
    text = worker_kubeconfig("gpu-east", "https://10.1.2.3:6443", CA, "token-value")
    assert kubeconfig_problems(text) == []
    doc = yaml.safe_load(text)
    assert doc["users"][0]["user"] == {"token": "token-value"}
    assert doc["clusters"][0]["cluster"]["server"] == "https://10.1.2.3:6443"


def test_a_worker_server_must_be_an_https_address_kueue_dials() -> None:
    assert load_config({"multiKueue": {"worker": {"server": "https://gpu.example.com:6443"}}})
    found = problems({"multiKueue": {"worker": {"server": "http://gpu.example.com"}}})
    assert any(m.startswith("gpu-queues:multiKueue.worker.server:") for m in found)


def test_a_secret_value_is_never_echoed_in_a_type_error() -> None:
    raw = manager_raw(workers=[{"name": "east", "kubeconfig": ["secret-as-a-list"]}])
    # The type error is reported, at the key, without the value.
    assert problems(raw) == [
        "gpu-queues:multiKueue.manager.workers[0].kubeconfig: Input should be a valid string"
    ]


# --- the stack file and the engine's secret keys -------------------------------------------


def stack_file(kubeconfig_value: Any) -> str:
    return yaml.safe_dump(
        {
            "config": {
                "gpu-queues:multiKueue": {
                    "manager": {
                        "workers": [{"name": "east", "kubeconfig": kubeconfig_value}],
                        "teams": [{"name": "ml"}],
                    }
                }
            }
        }
    )


def test_a_plain_text_kubeconfig_in_the_stack_file_is_refused() -> None:
    [problem] = stack_file_problems(stack_file("apiVersion: v1\n"), "Pulumi.mgr.yaml")
    assert str(problem).startswith(
        "gpu-queues:multiKueue.manager.workers[0].kubeconfig: is plain text in Pulumi.mgr.yaml"
    )
    assert "pulumi config set --secret --path" in problem.message


def test_a_secure_kubeconfig_in_the_stack_file_passes() -> None:
    assert stack_file_problems(stack_file({"secure": "v1:abcd"}), "Pulumi.mgr.yaml") == []
    whole = yaml.safe_dump({"config": {"gpu-queues:multiKueue": {"secure": "v1:abcd"}}})
    assert stack_file_problems(whole, "Pulumi.mgr.yaml") == []


def test_the_schema_takes_a_worker_kubeconfig_only_as_a_secret() -> None:
    spec = build_schema()["$defs"]["MultiKueueWorker"]["properties"]["kubeconfig"]
    kinds = [s.get("type") for s in spec["anyOf"]]
    assert kinds == ["object", "null"]  # no "string": plain text is not a valid value
    assert spec["anyOf"][0]["required"] == ["secure"]


def test_the_running_stack_refuses_a_kubeconfig_the_engine_does_not_hold_as_secret(
    tmp_path: Path,
) -> None:
    raw = manager_raw(workers=[{"name": "east", "kubeconfig": kubeconfig()}])
    config = load_config(raw)
    found = multikueue_problems(raw, config, tmp_path, "mgr", [])
    assert [str(p) for p in found] == [
        "gpu-queues:multiKueue.manager.workers[0].kubeconfig: is not a secret in this stack's "
        "config; set it with `pulumi config set --secret --path`"
    ]
    assert multikueue_problems(raw, config, tmp_path, "mgr", ["gpu-queues:multiKueue"]) == []
    (tmp_path / "Pulumi.mgr.yaml").write_text(stack_file(kubeconfig()))
    found = multikueue_problems(raw, config, tmp_path, "mgr", ["gpu-queues:multiKueue"])
    assert [p.loc for p in found] == [("multiKueue", "manager", "workers", 0, "kubeconfig")]


# --- worker stacks in the project -----------------------------------------------------------


def write_stack(directory: Path, name: str, config: dict[str, Any]) -> None:
    doc = {"config": {f"gpu-queues:{k}": v for k, v in config.items()}}
    (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(doc))


def worker_raw(**team_fields: Any) -> dict[str, Any]:
    worker = Stack().flavor(Flavor("gpu").capacity(gpu=4)).team(team(**team_fields))
    return worker.set("multiKueue", {"worker": {}}).raw()


def test_matching_worker_stacks_pass(tmp_path: Path) -> None:
    write_stack(tmp_path, "gpu-east", worker_raw())
    write_stack(tmp_path, "gpu-west", worker_raw())
    assert worker_stack_problems(manager_raw(), tmp_path, "mgr") == []


def test_a_worker_stack_without_the_team_or_with_other_names_is_refused(tmp_path: Path) -> None:
    write_stack(tmp_path, "gpu-east", worker_raw(name="vision"))
    write_stack(tmp_path, "gpu-west", worker_raw(namespace="ml-west"))
    found = [str(p) for p in worker_stack_problems(manager_raw(), tmp_path, "mgr")]
    assert any(
        "teams[0].name: team 'ml' dispatches to worker 'east', but stack 'gpu-east' has no team "
        "'ml' (it has: vision)" in m
        for m in found
    ), found
    assert any(
        "team 'ml' has namespace 'team-ml' here but 'ml-west' on worker 'west'" in m for m in found
    ), found


def test_a_team_is_checked_only_on_the_workers_it_dispatches_to(tmp_path: Path) -> None:
    write_stack(tmp_path, "gpu-east", worker_raw())
    write_stack(tmp_path, "gpu-west", worker_raw(name="vision"))
    raw = manager_raw(mk_teams=[{"name": "ml", "workers": ["east"]}])
    assert worker_stack_problems(raw, tmp_path, "mgr") == []


def test_a_worker_stack_that_exports_no_kubeconfig_is_refused_unless_one_is_given(
    tmp_path: Path,
) -> None:
    plain = worker_raw()
    del plain["multiKueue"]
    write_stack(tmp_path, "gpu-east", plain)
    raw = manager_raw(workers=[{"name": "east", "stack": "gpu-east"}])
    [problem] = worker_stack_problems(raw, tmp_path, "mgr")
    assert problem.loc == ("multiKueue", "manager", "workers", 0, "stack")
    assert "does not set gpu-queues:multiKueue.worker" in problem.message
    raw["multiKueue"]["manager"]["workers"][0]["kubeconfig"] = kubeconfig()
    assert worker_stack_problems(raw, tmp_path, "mgr") == []


def test_a_manager_cannot_be_its_own_worker_and_other_projects_are_not_read(
    tmp_path: Path,
) -> None:
    raw = manager_raw(workers=[{"name": "me", "stack": "mgr"}])
    [problem] = worker_stack_problems(raw, tmp_path, "mgr")
    assert "a manager cannot be its own worker" in problem.message
    write_stack(tmp_path, "gpu-east", worker_raw(name="vision"))
    elsewhere = manager_raw(workers=[{"name": "east", "stack": "acme/other-project/gpu-east"}])
    assert worker_stack_problems(elsewhere, tmp_path, "mgr") == []
    absent = manager_raw(workers=[{"name": "east", "stack": "not-in-this-repo"}])
    assert worker_stack_problems(absent, tmp_path, "mgr") == []


def test_the_committed_sandbox_stacks_pass_every_check() -> None:
    raw = parse_config((E2E / "Pulumi.local-mk-manager.yaml").read_text(), "manager")
    assert worker_stack_problems(raw, E2E, "local-mk-manager") == []
    config = load_config(raw)
    assert multikueue_problems(raw, config, E2E, "local-mk-manager", []) == []


# --- the manager's Kueue Configuration ------------------------------------------------------


def test_a_manager_runs_only_the_job_integration_and_its_own_origin_by_default() -> None:
    kueue = effective_kueue(load_config(manager_raw()), "prod-manager")
    assert kueue.manager.integrations is not None
    assert kueue.manager.integrations.frameworks == ["batch/job"]
    assert kueue.manager.multi_kueue is not None
    assert kueue.manager.multi_kueue.origin == "gpu-queues-prod-manager"


def test_a_manager_keeps_what_it_sets_itself() -> None:
    raw = manager_raw()
    raw["kueue"]["manager"] = {
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "multiKueue": {"origin": "mine", "gcInterval": "30s"},
    }
    kueue = effective_kueue(load_config(raw), "prod-manager")
    assert kueue.manager.integrations is not None
    assert kueue.manager.integrations.frameworks == ["batch/job", "jobset.x-k8s.io/jobset"]
    assert kueue.manager.multi_kueue is not None
    assert (kueue.manager.multi_kueue.origin, kueue.manager.multi_kueue.gc_interval) == (
        "mine",
        "30s",
    )


def test_other_stacks_keep_the_release_configuration() -> None:
    config = load_config({"multiKueue": {"worker": {}}})
    assert effective_kueue(config, "w") == config.kueue


def test_a_long_stack_name_still_gives_a_valid_origin() -> None:
    origin = default_origin("s" * 100)
    assert len(origin) <= 63 and origin.startswith("gpu-queues-")
    assert default_origin("s" * 100) != default_origin("s" * 99)


# --- the program under mocks ----------------------------------------------------------------


def manager_run(raw: dict[str, Any]) -> MockRun:
    return run_stack(load_config(raw), None, preview=True)


def test_the_manager_declares_secrets_clusters_configs_and_checks() -> None:
    raw = manager_raw(
        teams=[team(), team("vision", "team-vision")],
        mk_teams=[{"name": "ml"}, {"name": "vision", "workers": ["west"]}],
    )
    run = manager_run(raw)
    secrets = [r for r in run.of_kind("Secret") if r.typ == "kubernetes:core/v1:Secret"]
    assert sorted(s.inputs["metadata"]["name"] for s in secrets) == [
        "multikueue-east",
        "multikueue-west",
    ]
    assert {s.inputs["metadata"]["namespace"] for s in secrets} == {"kueue-system"}
    cluster = run.one("MultiKueueCluster", "east").inputs
    assert cluster["spec"] == {
        "clusterSource": {"kubeConfig": {"location": "multikueue-east", "locationType": "Secret"}}
    }
    assert run.one("MultiKueueConfig", "multikueue-ml").inputs["spec"] == {
        "clusters": ["east", "west"]
    }
    assert run.one("MultiKueueConfig", "multikueue-vision").inputs["spec"] == {"clusters": ["west"]}
    assert run.one("AdmissionCheck", "multikueue-vision").inputs["spec"] == {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {
            "apiGroup": "kueue.x-k8s.io",
            "kind": "MultiKueueConfig",
            "name": "multikueue-vision",
        },
    }
    assert run.one("ClusterQueue", "vision-cq").inputs["spec"]["admissionChecksStrategy"] == {
        "admissionChecks": [{"name": "multikueue-vision"}]
    }
    refs = [r for r in run.resources if r.typ == "pulumi:pulumi:StackReference"]
    assert sorted(r.inputs["name"] for r in refs) == ["gpu-east", "gpu-west"]
    assert run.outputs[keys.OUT_MULTI_KUEUE] == {
        "role": "manager",
        "workers": ["east", "west"],
        "admissionChecks": {"ml": "multikueue-ml", "vision": "multikueue-vision"},
    }


def test_a_team_that_does_not_dispatch_keeps_a_plain_cluster_queue() -> None:
    raw = manager_raw(teams=[team(), team("local", "team-local")])
    run = manager_run(raw)
    assert "admissionChecksStrategy" not in run.one("ClusterQueue", "local-cq").inputs["spec"]
    # written out by hand from team("local", "team-local"), in Kueue's v1beta2 shape
    assert run.one("ClusterQueue", "local-cq").inputs == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {
            "name": "local-cq",
            "labels": {
                "app.kubernetes.io/managed-by": "gpu-queues",
                "gpu-queues.dev/team": "local",
            },
        },
        "spec": {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "team-local"}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "gpu",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "8"},
                                {"name": "memory", "nominalQuota": "64Gi"},
                                {"name": "nvidia.com/gpu", "nominalQuota": "4"},
                            ],
                        }
                    ],
                }
            ],
        },
    }


def _mk(kind: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": kind,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "gpu-queues"}},
        "spec": spec,
    }


def test_the_manager_registers_the_multikueue_objects_kueue_documents() -> None:
    # Kueue's MultiKueue setup: a MultiKueueCluster per worker reading its kubeconfig from a
    # Secret in kueue-system, a MultiKueueConfig listing the clusters, and an AdmissionCheck
    # of controller kueue.x-k8s.io/multikueue parameterised by that config. By hand.
    run = manager_run(manager_raw())
    expected = [
        _mk(
            "MultiKueueCluster",
            worker,
            {
                "clusterSource": {
                    "kubeConfig": {"location": f"multikueue-{worker}", "locationType": "Secret"}
                }
            },
        )
        for worker in ("east", "west")
    ]
    expected.append(_mk("MultiKueueConfig", "multikueue-ml", {"clusters": ["east", "west"]}))
    expected.append(
        _mk(
            "AdmissionCheck",
            "multikueue-ml",
            {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": "multikueue-ml",
                },
            },
        )
    )
    for obj in expected:
        assert run.one(obj["kind"], obj["metadata"]["name"]).inputs == obj
    for kind in ("MultiKueueCluster", "MultiKueueConfig", "AdmissionCheck"):
        assert len(run.of_kind(kind)) == sum(o["kind"] == kind for o in expected), kind


def test_a_worker_declares_a_scoped_account_and_exports_a_kubeconfig_for_it() -> None:
    raw = {
        "kueue": {"install": False},
        "multiKueue": {"worker": {"server": "https://gpu-east.example.com:6443"}},
    }
    run = run_stack(load_config(raw), None)
    account = run.one("ServiceAccount", "multikueue-manager").inputs
    assert account["metadata"]["namespace"] == "kueue-system"
    token = run.one("Secret", "multikueue-manager-token").inputs
    assert token["type"] == "kubernetes.io/service-account-token"
    assert token["metadata"]["annotations"] == {
        "kubernetes.io/service-account.name": "multikueue-manager"
    }
    role = run.one("ClusterRole", "gpu-queues-multikueue-manager").inputs
    assert role["rules"] == manager_rules(["batch/job"])
    granted = {(r["apiGroups"][0], res) for r in role["rules"] for res in r["resources"]}
    assert ("batch", "jobs") in granted and ("kueue.x-k8s.io", "workloads/status") in granted
    assert not any(g == "" and r == "secrets" for g, r in granted)  # nothing beyond Kueue's need
    binding = run.one("ClusterRoleBinding", "gpu-queues-multikueue-manager").inputs
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "multikueue-manager", "namespace": "kueue-system"}
    ]
    exported = run.outputs[keys.OUT_MULTI_KUEUE_KUBECONFIG]
    assert kubeconfig_problems(exported) == []
    doc = yaml.safe_load(exported)
    assert doc["clusters"][0]["cluster"] == {
        "server": "https://gpu-east.example.com:6443",
        "certificate-authority-data": TOKEN_SECRET_DATA["ca.crt"],
    }
    assert doc["users"][0]["user"] == {"token": "issued-by-the-token-controller"}
    assert run.outputs[keys.OUT_MULTI_KUEUE] == {"role": "worker"}


def test_a_worker_grants_the_kinds_of_its_integrations() -> None:
    rules = manager_rules(["batch/job", "jobset.x-k8s.io/jobset", "pod", "kubeflow.org/mpijob"])
    granted = {(r["apiGroups"][0], r["resources"][0]) for r in rules}
    assert {
        ("batch", "jobs"),
        ("jobset.x-k8s.io", "jobsets"),
        ("", "pods"),
        ("kubeflow.org", "mpijobs"),
        ("kubeflow.org", "mpijobs/status"),
    } <= granted


def test_a_stack_without_multikueue_has_no_multikueue_outputs(dev_run: MockRun) -> None:
    assert keys.OUT_MULTI_KUEUE not in dev_run.outputs
    assert keys.OUT_MULTI_KUEUE_KUBECONFIG not in dev_run.outputs


def test_a_generated_manager_config_round_trips_through_json_like_the_engine_passes_it() -> None:
    raw = manager_raw(workers=[{"name": f"w{i}", "stack": f"gpu-{i}"} for i in range(20)])
    encoded = json.loads(json.dumps(copy.deepcopy(raw)))
    assert problems(encoded) == []
    too_many = manager_raw(workers=[{"name": f"w{i}", "stack": f"gpu-{i}"} for i in range(21)])
    assert any("workers" in m for m in problems(too_many))


# --- the validation core on admission check lists ---------------------------------------------


def test_a_cluster_queue_lists_each_admission_check_once_and_at_least_one() -> None:
    from gpu_queues.kueue.clusterqueue import CHECK_TWICE, cluster_queue_errors
    from gpu_queues.kueue.errors import LIST_SIZE

    cq = render.cluster_queue(team(), ["multikueue-ml"])
    assert cluster_queue_errors(cq) == []
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"].append({"name": "multikueue-ml"})
    [twice] = cluster_queue_errors(cq)
    assert twice.code == CHECK_TWICE
    assert twice.where == "spec.admissionChecksStrategy.admissionChecks[1].name"
    cq["spec"]["admissionChecksStrategy"]["admissionChecks"] = []
    [empty] = cluster_queue_errors(cq)
    assert empty.code == LIST_SIZE
    cq["spec"]["admissionChecksStrategy"] = {
        "admissionChecks": [{"name": f"c{i}"} for i in range(65)]
    }
    assert [e.code for e in cluster_queue_errors(cq)] == [LIST_SIZE]
