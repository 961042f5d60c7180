"""Who a team lets submit and which namespaces it may take (gpu_queues/config/subjects.py), on
hand-written teams: each problem at its key with its message in full. Kubernetes' system
identities are as its authenticators name them (kubernetes.io/docs/reference/access-authn-authz/
rbac: system:masters, system:authenticated, system:serviceaccounts[:<ns>], system:node:<name>,
system:kube-scheduler, ...)."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.config.errors import Loc, Problem
from gpu_queues.config.model import load_config
from gpu_queues.config.subjects import check_subjects, reserved_namespace_problems
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit

BASE: Loc = ("teams", 1)
SUBMIT = (
    ": binding it would let them submit jobs to this team's queue. Name the team's own users, "
    "groups or service accounts"
)
ODD = (
    " has surrounding whitespace or control characters, so it names nobody (or a look-alike); "
    "write the name as the cluster's authenticator reports it"
)
USE_OWN = (
    ": a service account from there may not submit to this team's queue. Use a service account "
    "in the team namespace"
)
DROPPED = (
    "gpu-queues:teams[1].submitters[0].namespace: namespace applies only to ServiceAccount "
    "subjects; a {kind} is cluster-wide and the namespace would be silently dropped. Remove it "
    "(the binding already only grants access in the team namespace)"
)


def subjects(*submitters: Any, namespace: Any = "team-a", others: Any = None) -> list[str]:
    team = {"name": "a", "namespace": namespace, "submitters": list(submitters)}
    out: list[Problem] = []
    check_subjects(BASE, team, others or {}, out)
    return [str(p) for p in out]


def user(name: Any, kind: str = "User", **more: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, **more}


def sa(name: Any, namespace: Any) -> dict[str, Any]:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def plain(name: str) -> str:
    """A test id with whitespace and control characters spelt as code points (mutmut gives the
    ids back to pytest on a command line)."""
    return "".join(c if c.isalnum() or c in ":-._" else f"U+{ord(c):04X}" for c in name)


def refused(kind: str, name: str, who: str, k: int = 0) -> str:
    return f"gpu-queues:teams[1].submitters[{k}].name: {kind} {name!r} is {who}{SUBMIT}"


def test_the_teams_own_users_groups_and_service_accounts_are_accepted():
    assert (
        subjects(
            user("alice@example.com"),
            user("ml-researchers", "Group"),
            user("Dr. Alice Example"),  # inner spaces are part of a name
            user("systemadmin"),  # not the system: prefix
            user("System:masters"),  # the prefix is case-sensitive
            sa("trainer", "team-a"),
            sa("trainer", None),  # the binding's own namespace
            user("system:serviceaccounts:team-a", "Group"),
        )
        == []
    )


SYSTEM = [
    ("system:masters", "Kubernetes' superuser group (cluster-admin everywhere)"),
    ("system:authenticated", "every authenticated user of the cluster"),
    ("system:unauthenticated", "every anonymous request"),
    ("system:anonymous", "every anonymous request"),
    ("system:serviceaccounts", "every service account of the cluster"),
    ("system:nodes", "every node's kubelet"),
    ("system:monitoring", "the cluster's monitoring"),
    ("system:serviceaccounts:team-b", "every service account of namespace 'team-b'"),
    ("system:serviceaccounts:a:b", "every service account of namespace 'a:b'"),
    (
        "system:serviceaccount:team-a:trainer",
        "a service account written as a user (use kind: ServiceAccount, with namespace)",
    ),
    ("system:node:gpu-0", "a node's kubelet"),
    ("system:kube-scheduler", "a Kubernetes control-plane component"),
    ("system:kube-controller-manager", "a Kubernetes control-plane component"),
    ("system:", "a name the 'system:' prefix reserves for Kubernetes' own users and groups"),
    (
        "system:nodes-of-team-a",
        "a name the 'system:' prefix reserves for Kubernetes' own users and groups",
    ),
    (
        "system:kube",
        "a name the 'system:' prefix reserves for Kubernetes' own users and groups",
    ),
]


@pytest.mark.parametrize(("name", "who"), SYSTEM, ids=[name for name, _ in SYSTEM])
@pytest.mark.parametrize("kind", ["User", "Group"])
def test_system_identities_are_refused_saying_who_they_are(kind, name, who):
    assert subjects(user(name, kind)) == [refused(kind, name, who)]


def test_only_a_group_of_the_teams_own_service_accounts_stays_inside_the_team():
    own = "system:serviceaccounts:team-a"
    assert subjects(user(own, "Group")) == []
    assert subjects(user(own)) == [
        refused("User", own, "every service account of namespace 'team-a'")
    ]
    # Another team's namespace, or the team's own group when the team has another namespace.
    assert subjects(user(own, "Group"), namespace="team-b") == [
        refused("Group", own, "every service account of namespace 'team-a'")
    ]


ODD_NAMES = [
    " alice",
    "alice ",
    "alice\n",
    "\talice",
    "al\x00ice",
    "al\x7fice",
    "al\u200bice",
    "alice\u202e",
]


@pytest.mark.parametrize("name", ODD_NAMES, ids=[plain(n) for n in ODD_NAMES])
@pytest.mark.parametrize("kind", ["User", "Group"])
def test_names_with_surrounding_whitespace_or_control_characters_are_refused(kind, name):
    assert subjects(user(name, kind)) == [
        f"gpu-queues:teams[1].submitters[0].name: {kind} name {name!r}{ODD}"
    ]


def test_a_system_name_is_refused_as_such_even_with_odd_characters():
    assert subjects(user("system:masters ")) == [
        refused(
            "User",
            "system:masters ",
            "a name the 'system:' prefix reserves for Kubernetes' own users and groups",
        )
    ]


@pytest.mark.parametrize("kind", ["User", "Group"])
def test_a_namespace_on_a_user_or_group_is_refused_as_dropped(kind):
    assert subjects(user("alice", kind, namespace="team-a")) == [DROPPED.format(kind=kind)]
    assert subjects(user("alice", kind, namespace="")) == [DROPPED.format(kind=kind)]
    # Without a name there is nothing more to check; the model reports the missing name.
    assert subjects(user(None, kind, namespace="team-a")) == [DROPPED.format(kind=kind)]
    assert subjects(user(7, kind)) == []


def test_both_problems_of_one_subject_are_reported_in_order():
    assert subjects(user("system:masters", namespace="team-a")) == [
        DROPPED.format(kind="User"),
        refused("User", "system:masters", "Kubernetes' superuser group (cluster-admin everywhere)"),
    ]


def test_subjects_of_other_kinds_or_shapes_are_left_to_the_models():
    assert subjects(user("system:masters", "user"), user("system:masters", None), "alice") == []
    assert subjects({"kind": "ServiceAccount"}, {"kind": "ServiceAccount", "name": 7}) == []
    team = {"namespace": "team-a", "submitters": {"kind": "User", "name": "system:masters"}}
    out: list[Problem] = []
    check_subjects(BASE, team, {}, out)
    assert out == []


BAD_SA_NAMES = ["Trainer", "trainer_1", "-trainer", "trainer.", "a" * 254, "tr ainer", ""]


@pytest.mark.parametrize("name", BAD_SA_NAMES, ids=[plain(n)[:20] or "empty" for n in BAD_SA_NAMES])
def test_a_service_account_name_must_be_a_dns_subdomain(name):
    assert subjects(user("alice"), sa(name, "team-a")) == [
        f"gpu-queues:teams[1].submitters[1].name: {name!r} is not a valid ServiceAccount name: "
        "the API server wants a DNS subdomain (lowercase letters, digits, '-' and '.')"
    ]


def test_a_service_account_name_of_253_characters_is_accepted():
    assert subjects(sa("a" * 253, "team-a"), sa("a.b-c", "team-a")) == []


def test_service_accounts_of_shared_or_other_teams_namespaces_are_refused():
    others = {"team-b": ("teams", 0), "team-c": ("teams", 2)}
    assert subjects(
        sa("trainer", "default"),
        sa("trainer", "team-c"),
        sa(None, "team-b"),
        sa("Bad", "default"),
        sa("trainer", "team-d"),  # no one's namespace: the team may use it
        others=others,
    ) == [
        "gpu-queues:teams[1].submitters[0].namespace: namespace 'default' is shared by everyone "
        f"who can run pods there{USE_OWN}",
        "gpu-queues:teams[1].submitters[1].namespace: namespace 'team-c' belongs to the team at "
        "teams[2], whose workloads could then spend this team's quota (share quota through the "
        f"cohort instead){USE_OWN}",
        "gpu-queues:teams[1].submitters[2].namespace: namespace 'team-b' belongs to the team at "
        "teams[0], whose workloads could then spend this team's quota (share quota through the "
        f"cohort instead){USE_OWN}",
        "gpu-queues:teams[1].submitters[3].name: 'Bad' is not a valid ServiceAccount name: the "
        "API server wants a DNS subdomain (lowercase letters, digits, '-' and '.')",
        "gpu-queues:teams[1].submitters[3].namespace: namespace 'default' is shared by everyone "
        f"who can run pods there{USE_OWN}",
    ]


def test_the_teams_own_namespace_is_never_another_teams_or_shared():
    # A team that adopted default may bind its own service accounts; the reserved namespaces
    # are reserved_namespace_problems' to report, once.
    assert subjects(sa("trainer", "default"), namespace="default") == []
    assert (
        subjects(sa("trainer", "team-b"), namespace="team-b", others={"team-b": ("teams", 0)}) == []
    )
    assert subjects(sa("trainer", "kube-system"), sa("trainer", "kueue-system")) == []
    assert subjects(sa("trainer", "kube-anything"), sa("trainer", 7)) == []


# --- reserved namespaces ---------------------------------------------------------------------


def reserved(*teams: Any, extra: tuple[str, ...] = ()) -> list[str]:
    return [str(p) for p in reserved_namespace_problems({"teams": list(teams)}, extra)]


TAKE = ", not a team's to take (adopted or not); give the team a namespace of its own"


def test_team_namespaces_of_the_cluster_or_of_kueue_are_refused():
    assert reserved(
        {"namespace": "kube-system"},
        {"namespace": "kube-flow"},
        {"namespace": "kueue-system", "adoptNamespace": True},
        {"namespace": "default"},
        {"namespace": "team-a"},
        {"namespace": ""},
        {"namespace": 7},
        {},
        "team",
    ) == [
        "gpu-queues:teams[0].namespace: namespace 'kube-system' belongs to the cluster "
        f"(Kubernetes' own components run there){TAKE}",
        "gpu-queues:teams[1].namespace: namespace 'kube-flow': the kube- prefix is reserved for "
        f"Kubernetes' own namespaces{TAKE}",
        "gpu-queues:teams[2].namespace: namespace 'kueue-system' is created by the Kueue release "
        f"manifest (Kueue's own namespace, where its controller runs){TAKE}",
    ]


def test_namespaces_the_manifest_creates_are_refused_once_it_is_read():
    teams = ({"namespace": "team-a"}, {"namespace": "kueue-metrics"})
    assert reserved(*teams) == []
    assert reserved(*teams, extra=("kueue-metrics", "other")) == [
        "gpu-queues:teams[1].namespace: namespace 'kueue-metrics' is created by the Kueue "
        f"release manifest{TAKE}"
    ]
    # Any iterable, read more than once.
    assert reserved(*teams, extra=iter(["kueue-metrics"])) == reserved(  # type: ignore[arg-type]
        *teams, extra=("kueue-metrics",)
    )


def test_submitter_service_accounts_in_reserved_namespaces_are_refused():
    team = {
        "namespace": "team-a",
        "submitters": [
            sa("trainer", "kube-system"),
            user("alice", namespace="kube-system"),  # not a service account: check_subjects
            sa("trainer", "team-a"),
            sa("trainer", ""),
            sa("trainer", None),
            sa("trainer", "kueue-metrics"),
            "ServiceAccount",
            sa("trainer", "kube-public"),
        ],
    }
    assert reserved({"namespace": "team-b"}, team, extra=("kueue-metrics",)) == [
        "gpu-queues:teams[1].submitters[0].namespace: namespace 'kube-system' belongs to the "
        f"cluster (Kubernetes' own components run there){USE_OWN}",
        "gpu-queues:teams[1].submitters[5].namespace: namespace 'kueue-metrics' is created by "
        f"the Kueue release manifest{USE_OWN}",
        "gpu-queues:teams[1].submitters[7].namespace: namespace 'kube-public' belongs to the "
        f"cluster (Kubernetes' own components run there){USE_OWN}",
    ]


def test_a_reserved_team_namespace_is_reported_once_not_again_for_its_service_accounts():
    team = {"namespace": "kube-system", "submitters": [sa("trainer", "kube-system")]}
    assert reserved(team) == [
        "gpu-queues:teams[0].namespace: namespace 'kube-system' belongs to the cluster "
        f"(Kubernetes' own components run there){TAKE}"
    ]


def test_reserved_namespaces_of_a_typed_config_and_of_none():
    config = load_config(stack_raw("dev"))
    own = config.teams[0].namespace
    assert reserved_namespace_problems(config) == []
    [problem] = reserved_namespace_problems(config, extra=[own])
    assert str(problem) == (
        f"gpu-queues:teams[0].namespace: namespace {own!r} is created by the Kueue release "
        f"manifest{TAKE}"
    )
    assert reserved_namespace_problems({}) == []
    assert reserved_namespace_problems({"teams": {"namespace": "kube-system"}}) == []
