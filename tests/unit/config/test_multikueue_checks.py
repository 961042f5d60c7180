"""MultiKueue in the stack config (gpu_queues/config/multikueue_checks.py) on hand-written raw
configs, kubeconfigs and stack files: each problem at its key with its message in full. What a
worker kubeconfig may hold is Kueue v0.18.3's (pkg/controller/admissionchecks/multikueue/
multikueuecluster.go: validateKubeconfig, validateRestConfig): no tokenFile, no
insecure-skip-tls-verify, no certificate-authority file, a server URL, no basic auth, no exec
or auth-provider plugin."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from gpu_queues.config.multikueue_checks import (
    DEFAULT_FRAMEWORKS,
    MANAGER,
    TEAMS,
    WORKERS,
    _object_loc,
    config_problems,
    inline_kubeconfig_problems,
    kubeconfig_problems,
    plaintext_at_runtime,
    stack_file_problems,
    worker_stack_name,
)

pytestmark = pytest.mark.unit

CA = "Q0E="  # base64 of "CA"
NO_KUBECONFIG = (
    "a worker needs its kubeconfig: set stack (its multiKueueKubeconfig output) or kubeconfig "
    "(with --secret)"
)
REFUSES = (
    ", which Kueue's MultiKueue refuses or cannot read in its pod; use a token or "
    "client-certificate-data"
)


# --- a worker kubeconfig ---------------------------------------------------------------------


def cluster(name: str = "east", **fields: Any) -> dict[str, Any]:
    return {
        "name": name,
        "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": CA, **fields},
    }


def kubeconfig(
    clusters: Any = None, users: Any = None, contexts: Any = None, current: Any = "east"
) -> str:
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster()] if clusters is None else clusters,
        "users": [{"name": "kueue", "user": {"token": "t0ken"}}] if users is None else users,
        "contexts": (
            [{"name": "east", "context": {"cluster": "east", "user": "kueue"}}]
            if contexts is None
            else contexts
        ),
    }
    if current is not None:
        doc["current-context"] = current
    return yaml.safe_dump(doc)


ON_A = [{"name": "east", "context": {"cluster": "a", "user": "kueue"}}]


def test_a_kubeconfig_with_a_token_and_ca_data_connects():
    assert kubeconfig_problems(kubeconfig()) == []
    cert = {"client-certificate-data": CA, "client-key-data": CA, "username": ""}
    assert kubeconfig_problems(kubeconfig(users=[{"name": "kueue", "user": cert}])) == []
    no_ca = {"name": "east", "cluster": {"server": "https://gpu.example.com"}}
    assert kubeconfig_problems(kubeconfig(clusters=[no_ca], users=[])) == []
    assert (
        kubeconfig_problems(kubeconfig(clusters=[cluster(**{"certificate-authority-data": ""})]))
        == []
    )


@pytest.mark.parametrize(
    "text", ["", "- clusters", "kubeconfig", "42"], ids=["empty", "list", "string", "number"]
)
def test_a_document_that_is_no_mapping_is_no_kubeconfig(text):
    assert kubeconfig_problems(text) == [
        "it is not a kubeconfig (a mapping with clusters, users and contexts)"
    ]


def test_text_that_is_no_yaml_is_refused():
    assert kubeconfig_problems("clusters: [east") == ["it is not valid YAML"]


def test_each_cluster_rule_kueue_has_is_reported_for_every_cluster():
    clusters = [
        cluster(
            "a",
            server="http://10.0.0.1",
            **{
                "insecure-skip-tls-verify": True,
                "certificate-authority": "/etc/ca.crt",
                "certificate-authority-data": "Q0E",
            },
        ),
        {"name": "b", "cluster": {}},
        {"name": "c", "cluster": {"server": "https://admin:pw@10.0.0.1"}},
        {"name": "d", "cluster": {"server": "", "certificate-authority-data": 7}},
        cluster("e", **{"insecure-skip-tls-verify": False, "certificate-authority": ""}),
        "not a cluster",
        {"name": "f"},
    ]
    assert kubeconfig_problems(kubeconfig(clusters=clusters, contexts=ON_A)) == [
        "cluster 'a' skips TLS verification, which Kueue refuses",
        "cluster 'a' names its CA by file path; Kueue wants certificate-authority-data",
        "cluster 'a': its server URL is refused: it must start with https:// (the manager "
        "authenticates with a token)",
        "cluster 'a': certificate-authority-data is not base64",
        "cluster 'b' has no server URL",
        "cluster 'c': its server URL is refused: it carries credentials (user:password@); Kueue "
        "refuses basic auth",
        "cluster 'd' has no server URL",
        "cluster 'd': certificate-authority-data is not base64",
        "cluster None has no server URL",
        "cluster 'f' has no server URL",
    ]


@pytest.mark.parametrize(
    "data",
    ["Q0E", "not base64!", "Q0E=\n", 7, ["Q0E="]],
    ids=["no-padding", "not-the-alphabet", "line-break", "number", "list"],
)
def test_ca_data_must_be_base64(data):
    text = kubeconfig(clusters=[cluster(**{"certificate-authority-data": data})])
    assert kubeconfig_problems(text) == ["cluster 'east': certificate-authority-data is not base64"]


def test_the_same_problem_twice_is_reported_once():
    clusters = [{"name": "a", "cluster": {}}, {"name": "a", "cluster": {}}, {"name": "b"}]
    assert kubeconfig_problems(kubeconfig(clusters=clusters, contexts=ON_A)) == [
        "cluster 'a' has no server URL",
        "cluster 'b' has no server URL",
    ]


CREDENTIALS = [
    ("tokenFile", "/var/run/token", "a token file"),
    ("username", "admin", "basic auth"),
    ("password", "pw", "basic auth"),
    ("exec", {"command": "aws"}, "an exec credential plugin"),
    ("auth-provider", {"name": "gcp"}, "an auth provider"),
    ("client-certificate", "/etc/client.crt", "a client certificate file"),
    ("client-key", "/etc/client.key", "a client key file"),
]


@pytest.mark.parametrize(("key", "value", "why"), CREDENTIALS, ids=[c[0] for c in CREDENTIALS])
def test_each_credential_kueue_cannot_use_is_refused(key, value, why):
    users = [{"name": "ok", "user": {"token": "t"}}, {"name": "kueue", "user": {key: value}}]
    assert kubeconfig_problems(kubeconfig(users=users)) == [
        f"user 'kueue' uses {why} ({key}){REFUSES}"
    ]


def test_every_credential_of_every_user_is_reported_in_order():
    user = {"tokenFile": "/t", "username": "a", "password": "b", "exec": {"command": "x"}}
    users = [{"name": "u", "user": user}, {"name": "v", "user": {"client-key": "/k"}}, "user"]
    assert kubeconfig_problems(kubeconfig(users=users)) == [
        f"user 'u' uses a token file (tokenFile){REFUSES}",
        f"user 'u' uses basic auth (username){REFUSES}",
        f"user 'u' uses basic auth (password){REFUSES}",
        f"user 'u' uses an exec credential plugin (exec){REFUSES}",
        f"user 'v' uses a client key file (client-key){REFUSES}",
    ]


@pytest.mark.parametrize("contexts", [[], {"east": {}}, "east"])
def test_a_kubeconfig_needs_contexts(contexts):
    assert kubeconfig_problems(kubeconfig(contexts=contexts)) == ["it has no contexts"]
    assert kubeconfig_problems(kubeconfig(contexts=contexts, current=None)) == [
        "it has no contexts"
    ]


@pytest.mark.parametrize("current", [None, ""])
def test_a_kubeconfig_needs_a_current_context(current):
    assert kubeconfig_problems(kubeconfig(current=current)) == [
        "it sets no current-context, which Kueue connects with"
    ]


def test_the_current_context_is_one_of_the_files_naming_one_of_its_clusters():
    # client-go's ConfirmUsable, which Kueue's RESTConfigFromKubeConfig runs: a current-context
    # that is no context is "context was not found"; a context whose cluster is not in the file
    # has no server ("no configuration has been provided").
    assert kubeconfig_problems(kubeconfig(current="west")) == [
        "its current-context 'west' is not one of its contexts (east), so Kueue cannot connect"
    ]
    contexts = [
        {"name": "east", "context": {"cluster": "west", "user": "kueue"}},
        {"name": "north", "context": {"user": "kueue"}},
        "south",
    ]
    assert kubeconfig_problems(kubeconfig(contexts=contexts)) == [
        "context 'east' names cluster 'west', which it does not define, so Kueue has no server "
        "to connect to"
    ]
    assert kubeconfig_problems(kubeconfig(contexts=contexts, current="north")) == [
        "context 'north' names cluster None, which it does not define, so Kueue has no server "
        "to connect to"
    ]
    assert kubeconfig_problems(kubeconfig(contexts=contexts, current="south")) == [
        "its current-context 'south' is not one of its contexts (east, north), so Kueue cannot "
        "connect"
    ]
    odd = [{"name": "east", "context": {"cluster": ["east"]}}, {"name": ["x"]}, {"context": {}}]
    assert kubeconfig_problems(kubeconfig(contexts=odd)) == [
        "context 'east' names cluster ['east'], which it does not define, so Kueue has no server "
        "to connect to"
    ]
    assert kubeconfig_problems(kubeconfig(current=["east"])) == [
        "its current-context ['east'] is not one of its contexts (east), so Kueue cannot connect"
    ]
    nameless = [{"cluster": {"server": "https://10.0.0.1"}}, {"name": "", "cluster": {}}]
    contexts = [{"name": "east", "context": {"cluster": ""}}]
    assert kubeconfig_problems(kubeconfig(clusters=nameless, contexts=contexts)) == [
        "cluster '' has no server URL",
        "context 'east' names cluster '', which it does not define, so Kueue has no server to "
        "connect to",
    ]
    # Another context may name what it likes: Kueue only connects with the current one.
    contexts = [{"name": "east", "context": {"cluster": "east"}}, {"name": "x", "context": {}}]
    assert kubeconfig_problems(kubeconfig(contexts=contexts)) == []


def test_problems_of_clusters_then_users_then_contexts():
    text = kubeconfig(
        clusters=[{"name": "a", "cluster": {}}],
        users=[{"name": "u", "user": {"username": "x"}}],
        contexts=[],
    )
    assert kubeconfig_problems(text) == [
        "cluster 'a' has no server URL",
        f"user 'u' uses basic auth (username){REFUSES}",
        "it has no contexts",
    ]


def test_inline_kubeconfigs_are_checked_at_their_worker():
    workers = [
        {"name": "a", "kubeconfig": "clusters: [east"},
        {"name": "b", "kubeconfig": kubeconfig()},
        {"name": "c", "stack": "c"},
        {"name": "d", "kubeconfig": {"secure": "v1:abc"}},
        "e",
        {
            "name": "f",
            "kubeconfig": kubeconfig(contexts=[], users=[{"name": "u", "user": {"password": "p"}}]),
        },
    ]
    found = inline_kubeconfig_problems({"multiKueue": {"manager": {"workers": workers}}})
    assert [str(p) for p in found] == [
        "gpu-queues:multiKueue.manager.workers[0].kubeconfig: Kueue would not connect with it: "
        "it is not valid YAML",
        "gpu-queues:multiKueue.manager.workers[5].kubeconfig: Kueue would not connect with it: "
        f"user 'u' uses basic auth (password){REFUSES}",
        "gpu-queues:multiKueue.manager.workers[5].kubeconfig: Kueue would not connect with it: "
        "it has no contexts",
    ]
    assert inline_kubeconfig_problems({}) == []
    assert inline_kubeconfig_problems({"multiKueue": {"manager": {"workers": {"a": 1}}}}) == []


# --- the stack config ------------------------------------------------------------------------


def team(name: str) -> dict[str, Any]:
    return {"name": name, "namespace": f"team-{name}", "clusterQueue": f"{name}-cq"}


def mk(manager: Any = None, teams: Any = ("a", "b"), **raw: Any) -> list[str]:
    config = {"teams": [team(t) for t in teams], "multiKueue": {"manager": manager}, **raw}
    return [str(p) for p in config_problems(config)]


EAST = {"name": "east", "stack": "org/gpu-queues/east"}


def test_a_manager_with_declared_workers_and_teams_has_no_problems():
    assert mk({"workers": [EAST], "teams": [{"name": "a"}]}) == []
    assert (
        mk(
            {
                "workers": [EAST, {"name": "west", "kubeconfig": "k"}],
                "teams": [{"name": "a", "workers": ["west"]}],
            }
        )
        == []
    )
    assert config_problems({}) == []
    assert config_problems({"multiKueue": {"worker": {"server": "https://x"}}}) == []
    assert config_problems({"multiKueue": {"manager": {}}}) == []
    assert config_problems({"multiKueue": "manager"}) == []


def test_a_cluster_is_a_manager_or_a_worker_not_both():
    both = {"multiKueue": {"manager": {"workers": [EAST]}, "worker": {}}}
    assert [str(p) for p in config_problems(both)] == [
        "gpu-queues:multiKueue: a cluster is a MultiKueue manager or a worker, not both: set "
        "manager on the stack teams submit to, worker on the stacks whose clusters run the jobs"
    ]
    # An empty manager is still one.
    assert len(config_problems({"multiKueue": {"manager": {}, "worker": {}}})) == 1
    assert config_problems({"multiKueue": {"manager": None, "worker": {}}}) == []


def test_workers_are_named_once_each_cluster_once_each_with_a_kubeconfig():
    workers = [
        {"name": "east", "stack": "s"},
        {"name": "east", "stack": "s"},
        {"name": "west"},
        {"name": None, "stack": None, "kubeconfig": "k"},
        {"kubeconfig": "k"},
        {"name": "north", "kubeconfig": None, "stack": "n"},
    ]
    assert mk({"workers": workers, "teams": []}) == [
        "gpu-queues:multiKueue.manager.workers[1].name: worker 'east' is already at "
        "gpu-queues:multiKueue.manager.workers[0].name",
        "gpu-queues:multiKueue.manager.workers[1].stack: worker stack (one cluster, two workers) "
        "'s' is already at gpu-queues:multiKueue.manager.workers[0].stack",
        f"gpu-queues:multiKueue.manager.workers[2]: {NO_KUBECONFIG}",
        # A worker without a name renders a MultiKueueCluster 'None'; the model reports the name.
        "gpu-queues:multiKueue.manager.workers: MultiKueueCluster 'None': location "
        "'multikueue-None' is not a Secret name",
        "gpu-queues:multiKueue.manager.workers: MultiKueueCluster 'None': location "
        "'multikueue-None' is not a Secret name",
    ]


def test_a_worker_without_a_name_or_stack_does_not_hide_a_later_duplicate():
    workers = [{"kubeconfig": "k"}, {"name": "east", "stack": "s"}, {"name": "east", "stack": "s"}]
    assert mk({"workers": workers, "teams": []}) == [
        "gpu-queues:multiKueue.manager.workers[2].name: worker 'east' is already at "
        "gpu-queues:multiKueue.manager.workers[1].name",
        "gpu-queues:multiKueue.manager.workers[2].stack: worker stack (one cluster, two workers) "
        "'s' is already at gpu-queues:multiKueue.manager.workers[1].stack",
        "gpu-queues:multiKueue.manager.workers: MultiKueueCluster 'None': location "
        "'multikueue-None' is not a Secret name",
    ]


def test_dispatching_teams_are_named_once_and_declared_as_teams():
    teams = [{"name": "a"}, {"name": "b"}, {"name": "a"}, {"name": "zz"}, {"name": None}, {}]
    unnamed = (
        "gpu-queues:multiKueue.manager.teams[4].name: AdmissionCheck 'multikueue-None': "
        "parameters name 'multikueue-None' is not a DNS label of at most 63 characters"
    )
    assert mk({"workers": [EAST], "teams": teams}) == [
        "gpu-queues:multiKueue.manager.teams[2].name: dispatching team 'a' is already at "
        "gpu-queues:multiKueue.manager.teams[0].name",
        "gpu-queues:multiKueue.manager.teams[3].name: team 'zz' is not declared under teams "
        "(declared: a, b)",
        # The teams without a name (the models report it) render a check 'multikueue-None',
        # both placed at the first of them.
        unnamed,
        unnamed,
    ]
    assert mk({"workers": [EAST], "teams": [{"name": "a"}]}, teams=()) == [
        "gpu-queues:multiKueue.manager.teams[0].name: team 'a' is not declared under teams "
        "(declared: none)"
    ]
    assert mk({"workers": [EAST], "teams": [{"name": "b"}]}, teams=("b", "a", "c")) == []


def test_a_teams_own_workers_are_listed_once_and_declared():
    workers = [EAST, {"name": "west", "stack": "w"}]
    teams = [{"name": "a", "workers": ["west", "east", "west", "nowhere", 7]}]
    assert mk({"workers": workers, "teams": teams}) == [
        "gpu-queues:multiKueue.manager.teams[0].workers[2]: worker 'west' is already at "
        "gpu-queues:multiKueue.manager.teams[0].workers[0]",
        "gpu-queues:multiKueue.manager.teams[0].workers[3]: worker 'nowhere' is not declared "
        "under multiKueue.manager.workers (declared: east, west)",
        "gpu-queues:multiKueue.manager.teams[0].workers[2]: MultiKueueConfig 'multikueue-a': "
        "cluster 'west' is listed twice",
        "gpu-queues:multiKueue.manager.teams[0].workers[4]: MultiKueueConfig 'multikueue-a': the "
        "cluster name is not set",
        "gpu-queues:multiKueue.manager.teams[0].workers[3]: MultiKueueConfig 'multikueue-a': "
        "MultiKueueCluster 'nowhere' is not declared (declared: east, west), so no job is ever "
        "dispatched to it",
    ]
    assert mk({"workers": [], "teams": [{"name": "a", "workers": ["east"]}]}) == [
        "gpu-queues:multiKueue.manager.teams[0].workers[0]: worker 'east' is not declared under "
        "multiKueue.manager.workers (declared: none)",
        "gpu-queues:multiKueue.manager.teams[0].workers[0]: MultiKueueConfig 'multikueue-a': "
        "MultiKueueCluster 'east' is not declared (declared: none), so no job is ever "
        "dispatched to it",
    ]


def test_kueues_rules_on_the_rendered_objects_map_to_the_key_that_makes_them():
    workers = [EAST, {"name": "Bad_Name", "kubeconfig": "k"}, {"name": "east", "stack": "x"}]
    teams = [{"name": "a"}, {"name": "b", "workers": []}, {"name": "Bad Team", "workers": ["east"]}]
    found = mk({"workers": workers, "teams": teams}, teams=("a", "b", "Bad Team"))
    assert found == [
        "gpu-queues:multiKueue.manager.workers[2].name: worker 'east' is already at "
        "gpu-queues:multiKueue.manager.workers[0].name",
        "gpu-queues:multiKueue.manager.workers[1].name: MultiKueueCluster 'Bad_Name': location "
        "'multikueue-Bad_Name' is not a Secret name",
        # Every worker, when the team names none: the position in the manager's worker list.
        "gpu-queues:multiKueue.manager.workers[2].name: MultiKueueConfig 'multikueue-a': "
        "cluster 'east' is listed twice",
        "gpu-queues:multiKueue.manager.teams[1].name: MultiKueueConfig 'multikueue-b': clusters "
        "has 0 entries",
        "gpu-queues:multiKueue.manager.teams[2].name: AdmissionCheck 'multikueue-Bad Team': "
        "parameters name 'multikueue-Bad Team' is not a DNS label of at most 63 characters",
    ]


def test_the_manager_keeps_the_multikueue_gate_on():
    off = {"kueue": {"manager": {"featureGates": {"MultiKueue": False}}}}
    assert mk({"workers": [EAST], "teams": [{"name": "a"}]}, **off) == [
        "gpu-queues:kueue.manager.featureGates.MultiKueue: this stack is a MultiKueue manager "
        "(multiKueue.manager), but the gate switches MultiKueue off, so no job would ever leave "
        "this cluster; remove it (on by default since Kueue v0.9)"
    ]
    for gate in (True, None, 0, "false"):
        on = {"kueue": {"manager": {"featureGates": {"MultiKueue": gate}}}}
        assert mk({"workers": [EAST], "teams": [{"name": "a"}]}, **on) == []


@pytest.mark.parametrize(
    ("obj", "path", "loc"),
    [
        (
            {"kind": "MultiKueueCluster", "metadata": {"name": "west"}},
            ("spec",),
            (*WORKERS, 1, "name"),
        ),
        ({"kind": "MultiKueueCluster", "metadata": {"name": "nowhere"}}, ("spec",), WORKERS),
        (
            {"kind": "MultiKueueConfig", "metadata": {"name": "multikueue-b"}},
            ("spec", "clusters", 1),
            (*TEAMS, 1, "workers", 1),
        ),
        (
            {"kind": "MultiKueueConfig", "metadata": {"name": "multikueue-a"}},
            ("spec", "clusters", 1),
            (*WORKERS, 1, "name"),
        ),
        (
            {"kind": "MultiKueueConfig", "metadata": {"name": "multikueue-a"}},
            ("spec", "clusters"),
            (*TEAMS, 0, "name"),
        ),
        (
            {"kind": "MultiKueueConfig", "metadata": {"name": "multikueue-a"}},
            ("metadata", "name", 0),
            (*TEAMS, 0, "name"),
        ),
        (
            {"kind": "AdmissionCheck", "metadata": {"name": "multikueue-b"}},
            ("spec", "clusters", 0),
            (*TEAMS, 1, "name"),
        ),
        ({"kind": "AdmissionCheck", "metadata": {"name": "multikueue-zz"}}, ("spec",), MANAGER),
        ({"kind": "MultiKueueConfig", "metadata": {"name": "b"}}, ("spec", "clusters", 0), MANAGER),
    ],
)
def test_where_a_rendered_multikueue_field_comes_from(obj, path, loc):
    manager = {
        "workers": [{"name": "east"}, {"name": "west"}],
        "teams": [{"name": "a"}, {"name": "b", "workers": ["east", "west"]}],
    }
    assert _object_loc(obj, path, manager) == loc


def test_multikueue_dispatches_jobs_by_default():
    assert DEFAULT_FRAMEWORKS == ("batch/job",)


# --- the stack file and the running stack ----------------------------------------------------


def stack_file(*workers: Any, whole: Any = None) -> str:
    block = whole if whole is not None else {"manager": {"workers": list(workers)}}
    return yaml.safe_dump({"config": {"gpu-queues:multiKueue": block, "gpu-queues:teams": []}})


def test_a_plain_text_kubeconfig_in_the_stack_file_is_refused_with_the_command_that_fixes_it():
    text = stack_file(
        {"name": "a", "kubeconfig": {"secure": "v1:abc"}},
        {"name": "b", "stack": "b"},
        {"name": "c", "kubeconfig": "apiVersion: v1"},
        {"name": "d", "kubeconfig": {"secure": 7}},
        {"name": "e", "kubeconfig": {"secure": "v1:abc", "plain": "x"}},
        {"name": "f", "kubeconfig": ""},
        "g",
    )
    fix = "< kubeconfig`"
    assert [str(p) for p in stack_file_problems(text, "Pulumi.mgr.yaml")] == [
        f"gpu-queues:multiKueue.manager.workers[{i}].kubeconfig: is plain text in Pulumi.mgr.yaml; "
        "a kubeconfig must be a secret. Set it with `pulumi config set --secret --path "
        f"'gpu-queues:multiKueue.manager.workers[{i}].kubeconfig' {fix}"
        for i in (2, 3, 4, 5)
    ]


def test_a_stack_file_with_its_multikueue_block_encrypted_or_unreadable_passes():
    assert stack_file_problems(stack_file(whole={"secure": "v1:abc"}), "P") == []
    assert stack_file_problems("config: [unclosed", "P") == []
    assert stack_file_problems("- config", "P") == []
    assert stack_file_problems("config:\n  gpu-queues:teams: []\n", "P") == []
    # Not a secure value: its workers are read (none here).
    assert stack_file_problems(stack_file(whole={"secure": "v1:abc", "manager": {}}), "P") == []


def test_an_inline_kubeconfig_must_be_held_as_a_secret_by_the_engine():
    workers = [
        {"name": "a", "kubeconfig": "apiVersion: v1"},
        {"name": "b", "stack": "b"},
        {"name": "c", "kubeconfig": ""},
        "d",
    ]
    raw = {"multiKueue": {"manager": {"workers": workers}}}
    assert [str(p) for p in plaintext_at_runtime(raw, ["gpu-queues:teams"])] == [
        f"gpu-queues:multiKueue.manager.workers[{i}].kubeconfig: is not a secret in this stack's "
        "config; set it with `pulumi config set --secret --path`"
        for i in (0, 2)
    ]
    assert plaintext_at_runtime(raw, {"gpu-queues:multiKueue"}) == []
    assert plaintext_at_runtime({}, []) == []


@pytest.mark.parametrize(
    ("reference", "stack"),
    [
        ("east", "east"),
        ("org/east", "east"),
        ("org/gpu-queues/east", "east"),
        ("org/other-project/east", None),
        ("org/gpu-queues-2/east", None),
        ("a/b/c/d", "d"),
        ("", ""),
    ],
)
def test_a_stack_reference_names_a_stack_of_this_project_or_none(reference, stack):
    assert worker_stack_name(reference) == stack


def test_a_stack_reference_of_another_project_given_by_name():
    assert worker_stack_name("org/other/east", project="other") == "east"
    assert worker_stack_name("org/gpu-queues/east", project="other") is None
