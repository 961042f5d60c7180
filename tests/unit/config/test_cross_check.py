"""The stack's own relations (gpu_queues/config/checks.py cross_check) on hand-written raw
configs: each problem at its key with its message in full."""

from __future__ import annotations

import pytest

from gpu_queues.config.checks import cross_check, manifest_url_problem
from tests.builders import Stack, Team

pytestmark = pytest.mark.unit


def team(name, **fields):
    """A team the Kueue rules accept: its own namespace and queues, quotas of flavor std."""
    return Team(name).local_queue(f"{name}-q").quota("std", cpu=1, memory="1Gi").set(**fields).raw()


def stack(*teams, **raw):
    built = Stack().flavor("std").team(*teams)
    for key, value in raw.items():
        built.set(key, value)
    return built.raw()


def problems(raw):
    return [str(p) for p in cross_check(raw)]


def test_a_valid_stack_has_no_problems():
    assert problems(stack(team("a"), team("b"))) == []
    assert problems({}) == []


def test_duplicate_names_name_where_each_was_first_used():
    raw = stack(
        team("a"),
        team("a", namespace="team-x", clusterQueue="x-cq", localQueue="x-q"),
        team("b", namespace="team-a", clusterQueue="a-cq"),
        flavors=[{"name": "std"}, {"name": "std"}, {"name": None}, {"name": None}],
        priorityClasses=[{"name": "high", "value": 1}, {"name": "high", "value": 2}],
    )
    assert problems(raw) == [
        "gpu-queues:flavors[1].name: duplicate flavor name 'std': already used at "
        "gpu-queues:flavors[0].name",
        "gpu-queues:priorityClasses[1].name: duplicate priority class name 'high': already used "
        "at gpu-queues:priorityClasses[0].name",
        "gpu-queues:teams[1].name: duplicate team name 'a': already used at "
        "gpu-queues:teams[0].name",
        "gpu-queues:teams[2].namespace: duplicate team namespace (each team has its own) "
        "'team-a': already used at gpu-queues:teams[0].namespace",
        "gpu-queues:teams[2].clusterQueue: duplicate ClusterQueue name 'a-cq': already used at "
        "gpu-queues:teams[0].clusterQueue",
    ]


def test_a_team_cohort_must_be_the_declared_one():
    assert problems(stack(team("a", cohort="pool"))) == [
        "gpu-queues:teams[0].cohort: cohort 'pool' is not declared; no cohort is declared"
    ]
    declared = stack(team("a", cohort="pool"), team("b", cohort="other"), cohort={"name": "pool"})
    assert problems(declared) == [
        "gpu-queues:teams[1].cohort: cohort 'other' is not declared; the declared cohort is 'pool'"
    ]


def test_a_default_namespace_needs_adopt_namespace_true():
    assert problems(stack(team("a", namespace="default"))) == [
        "gpu-queues:teams[0].adoptNamespace: namespace 'default' always exists: set "
        "adoptNamespace: true to use it"
    ]
    assert problems(stack(team("a", namespace="default", adoptNamespace=True))) == []
    assert problems(stack(team("a", namespace="default", adoptNamespace="true"))) == [
        "gpu-queues:teams[0].adoptNamespace: namespace 'default' always exists: set "
        "adoptNamespace: true to use it"
    ]


def volume(name, namespace, claim):
    return {"volumeName": name, "namespace": namespace, "claimName": claim}


def test_shared_storage_one_claim_per_volume_in_a_team_namespace():
    raw = stack(
        team("a"),
        team("b"),
        sharedStorage=[
            volume("pv-1", "team-a", "data"),
            volume("pv-1", "team-b", "data"),
            volume("pv-2", "team-a", "data"),
            volume("pv-3", "elsewhere", "data"),
            volume(None, "team-b", "other"),
        ],
    )
    assert problems(raw) == [
        "gpu-queues:sharedStorage[1].volumeName: PersistentVolume 'pv-1' is already claimed by "
        "team-a/data; a PersistentVolume binds to exactly one claim. For another namespace, "
        "have the platform create a second static volume on the same storage and add it here "
        "with its own volumeName",
        "gpu-queues:sharedStorage[3].namespace: namespace 'elsewhere' is not a team namespace; "
        "claims go into a team namespace: team-a, team-b",
        "gpu-queues:sharedStorage[2].claimName: duplicate claim (namespace, name) "
        "('team-a', 'data'): already used at gpu-queues:sharedStorage[0].claimName",
    ]
    no_teams = {"sharedStorage": [volume("pv-1", "team-a", "data")]}
    assert problems(no_teams) == [
        "gpu-queues:sharedStorage[0].namespace: namespace 'team-a' is not a team namespace; "
        "claims go into a team namespace: none"
    ]


SHA = "a" * 64


@pytest.mark.parametrize(
    ("url", "sha256", "reason"),
    [
        ("https://mirror.example/kueue.yaml", None, None),
        ("http://mirror.example/kueue.yaml", SHA, None),
        ("file:///srv/kueue.yaml", None, None),
        ("file://localhost/srv/kueue.yaml", None, None),
        ("HTTPS://mirror.example/k.yaml", None, None),
        (
            "https://mirror.example/a b.yaml",
            None,
            "the URL contains whitespace or control characters",
        ),
        (
            "https://mirror.example/a\x00.yaml",
            None,
            "the URL contains whitespace or control characters",
        ),
        (
            "https://user:pw@mirror.example/k.yaml",
            None,
            "the URL carries credentials (user:password@), which would sit in the stack file "
            "and in logs; use a mirror that needs none, or download the file and set path",
        ),
        (
            "https://user@mirror.example/k.yaml",
            None,
            "the URL carries credentials (user:password@), which would sit in the stack file "
            "and in logs; use a mirror that needs none, or download the file and set path",
        ),
        ("https:///k.yaml", None, "the URL has no host"),
        ("http:///k.yaml", SHA, "the URL has no host"),
        (
            "HTTP://mirror.example/k.yaml",
            "",
            "an http:// URL is fetched without TLS, so anyone on the way can change the "
            "manifest, and no kueue.manifest.sha256 is set to catch it; use https://, or pin "
            "the manifest's sha256",
        ),
        (
            "file://fileserver/srv/k.yaml",
            None,
            "file:// URLs name a file on this machine, but this one names host 'fileserver'; "
            "write file:///absolute/path, or use path",
        ),
    ],
)
def test_where_the_manifest_may_come_from(url, sha256, reason):
    assert manifest_url_problem(url, sha256) == reason


def test_the_manifest_url_problem_is_reported_at_its_key():
    raw = {"kueue": {"manifest": {"url": "http://mirror.example/k.yaml"}}}
    [problem] = cross_check(raw)
    assert problem.loc == ("kueue", "manifest", "url")
    assert problem.message.startswith("an http:// URL is fetched without TLS")
    assert cross_check({"kueue": {"manifest": {"url": "https://mirror.example/k.yaml"}}}) == []


def test_integrations_and_feature_gates_the_version_knows():
    raw = {
        "kueue": {
            "version": "v0.18.3",
            "manager": {
                "integrations": {
                    "frameworks": ["batch/job", "batch/job", "example.com/nope", 7],
                    "externalFrameworks": ["MyJob.v1.example.com", "MyJob.v1", "MyJob..example", 3],
                },
                "featureGates": {"NoSuchGate": True},
            },
        }
    }
    said = problems(raw)
    base = "gpu-queues:kueue.manager.integrations"
    assert said[0] == f"{base}.frameworks[1]: 'batch/job' is listed twice"
    assert said[1].startswith(
        f"{base}.frameworks[2]: 'example.com/nope' is not a Kueue v0.18.3 integration (Kueue "
        "would refuse to start); known: "
    )
    assert said[2] == (
        "gpu-queues:kueue.manager.featureGates.NoSuchGate: feature gate 'NoSuchGate' does not "
        "exist in Kueue v0.18.3 (it would refuse to start: unrecognized feature gate); remove it"
    )
    form = "must have the form Kind.version.group (e.g. MyJob.v1.example.com), as Kueue reads it"
    assert said[3:] == [
        f"{base}.externalFrameworks[1]: 'MyJob.v1' {form}",
        f"{base}.externalFrameworks[2]: 'MyJob..example' {form}",
    ]
    # A version without facts is not judged here (the manifest check refuses it).
    raw["kueue"]["version"] = "v0.1.0"
    assert problems(raw) == [
        f"{base}.frameworks[1]: 'batch/job' is listed twice",
        f"{base}.externalFrameworks[1]: 'MyJob.v1' {form}",
        f"{base}.externalFrameworks[2]: 'MyJob..example' {form}",
    ]


def test_the_controller_resources_come_in_whole_numbers_where_kubernetes_says_so():
    raw = {
        "kueue": {
            "controller": {
                "resources": {
                    "requests": {"cpu": "500m", "nvidia.com/gpu": "0.5"},
                    "limits": {"memory": "1Gi", "example.com/nic": "1500m"},
                }
            }
        }
    }
    said = cross_check(raw)
    assert [p.loc for p in said] == [
        ("kueue", "controller", "resources", "requests", "nvidia.com/gpu"),
        ("kueue", "controller", "resources", "limits", "example.com/nic"),
    ]
    assert all(p.message for p in said)


def test_a_value_left_out_is_skipped_and_the_check_goes_on():
    raw = stack(team("a"), flavors=[{"name": None}, {"name": "std"}, {"name": "std"}])
    assert problems(raw) == [
        "gpu-queues:flavors[2].name: duplicate flavor name 'std': already used at "
        "gpu-queues:flavors[1].name"
    ]


def test_a_service_account_of_another_teams_namespace_may_not_submit():
    other = {"kind": "ServiceAccount", "name": "ci", "namespace": "team-b"}
    own = {"kind": "ServiceAccount", "name": "ci", "namespace": "team-a"}
    raw = stack(team("a", submitters=[other, own]), team("b"))
    assert problems(raw) == [
        "gpu-queues:teams[0].submitters[0].namespace: namespace 'team-b' belongs to the team "
        "at teams[1], whose workloads could then spend this team's quota (share "
        "quota through the cohort instead): a service account from there may not submit to "
        "this team's queue. Use a service account in the team namespace"
    ]
    # the first team that has a namespace is the one named
    raw = stack(team("a", submitters=[other]), team("b"), team("c", namespace="team-b"))
    [refusal] = [p for p in problems(raw) if ".submitters[0]" in p]
    assert "belongs to the team at teams[1]," in refusal


def test_a_cluster_namespace_is_not_a_teams():
    assert problems(stack(team("a", namespace="kube-system", adoptNamespace=True))) == [
        "gpu-queues:teams[0].namespace: namespace 'kube-system' belongs to the cluster "
        "(Kubernetes' own components run there), not a team's to take (adopted or not); give "
        "the team a namespace of its own"
    ]


def test_an_http_manifest_with_its_sha256_pinned_may_be_fetched():
    pinned = {"kueue": {"manifest": {"url": "http://mirror.example/k.yaml", "sha256": SHA}}}
    assert cross_check(pinned) == []


def test_frameworks_checks_go_on_past_a_value_of_the_wrong_type():
    raw = {"kueue": {"manager": {"integrations": {"frameworks": [7, "batch/job", "batch/job"]}}}}
    assert problems(raw) == [
        "gpu-queues:kueue.manager.integrations.frameworks[2]: 'batch/job' is listed twice"
    ]


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("MyJob.v1.example", False),  # two dots: Kind, version, a one-label group
        ("MyJob.v1.example.com", False),
        # Kueue cuts the name at its first two dots (ParseKindArg): the rest is the group as
        # written, odd or not
        ("MyJob.v1.example..com", False),
        ("MyJob.v1.example.", False),
        ("MyJob..v1.example", True),  # Kueue reads Kind, "" as the version, v1.example
        ("MyJob.v1.", True),
        (".v1.example.com", True),
    ],
)
def test_an_external_framework_is_kind_version_group(name, refused):
    raw = {"kueue": {"manager": {"integrations": {"externalFrameworks": [name]}}}}
    assert bool(problems(raw)) is refused
