"""Hostile stack configs (issue 10, part C): each refused, with the key named, before any
resource is registered.

Every case breaks one thing in a committed stack (prod unless said otherwise) the way a
careless or malicious user would, and names the key the refusal must point at and a fragment
of its message. The classes: namespaces that are not a team's to take; RBAC subjects that
widen access beyond the team or name nobody; fractions of extended resources; storage sizes
and names the API server would refuse; manifest URLs that are not authenticated or leak
secrets; node shapes that do not add up; ResourceFlavors Kueue's CEL rules refuse; quota
structure Kueue's webhook refuses.
"""

from __future__ import annotations

import copy
import json
import re
import runpy
from dataclasses import dataclass
from typing import Any

import pulumi
import pytest

from gpu_queues import keys
from gpu_queues.config import render
from gpu_queues.config.model import ConfigError, load_config
from gpu_queues.kueue.capacity import quota_totals
from gpu_queues.kueue.quantity import parse_quantity
from tests.conftest import ROOT, MockRun, mocks_for, stack_raw

pytestmark = pytest.mark.unit

DELETE = object()
GPU = "teams[0].resourceGroups[0].flavors[0].resources['nvidia.com/gpu']"
_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\['([^']*)'\]")


def _parts(path: str) -> list[str | int]:
    parts: list[str | int] = []
    for name, index, key in _TOKEN.findall(path):
        parts.append(int(index) if index else (name or key))
    return parts


def edit(raw: dict[str, Any], path: str, value: Any) -> None:
    *head, last = _parts(path)
    node: Any = raw
    for part in head:
        node = node.setdefault(part, {}) if isinstance(part, str) else node[part]
    if value is DELETE:
        del node[last]
    elif isinstance(last, int) and last == len(node):
        node.append(value)
    else:
        node[last] = value


@dataclass(frozen=True)
class Case:
    id: str
    edits: tuple[tuple[str, Any], ...]
    at: str
    says: str
    base: str = "prod"

    def raw(self) -> dict[str, Any]:
        raw = copy.deepcopy(stack_raw(self.base))
        for path, value in self.edits:
            edit(raw, path, value)
        return raw


def plain(name: str) -> str:
    """A test id for a hostile name: whitespace and control characters spelt as code points,
    so that the id can be given back to pytest on a command line (mutmut does)."""
    return "".join(c if c.isalnum() or c in ":-" else f"U+{ord(c):04X}" for c in name)


def case(id: str, at: str, says: str, *edits: tuple[str, Any], base: str = "prod") -> Case:
    return Case(id, tuple(edits) or ((at, None),), at, says, base)


def one(id: str, path: str, value: Any, says: str, base: str = "prod") -> Case:
    return Case(id, ((path, value),), path, says, base)


NAMESPACES = [
    one("ns-kube-system", "teams[0].namespace", "kube-system", "belongs to the cluster"),
    one("ns-kube-public", "teams[0].namespace", "kube-public", "belongs to the cluster"),
    one("ns-kube-node-lease", "teams[0].namespace", "kube-node-lease", "belongs to the cluster"),
    one(
        "ns-kueue-system",
        "teams[0].namespace",
        "kueue-system",
        "created by the Kueue release manifest",
    ),
    one("ns-kube-prefix", "teams[0].namespace", "kube-flannel", "kube- prefix is reserved"),
    one("ns-kube-prefix-2", "teams[2].namespace", "kube-team", "kube- prefix is reserved"),
    *[
        case(
            f"ns-{ns}-adopted",
            "teams[1].namespace",
            "not a team's to take (adopted or not)",
            ("teams[1].namespace", ns),
            ("teams[1].adoptNamespace", True),
        )
        for ns in ("kube-system", "kube-public", "kube-node-lease", "kueue-system", "kube-x")
    ],
    case(
        "ns-dev-kube-system-adopted",
        "teams[0].namespace",
        "belongs to the cluster",
        ("teams[0].namespace", "kube-system"),
        base="dev",
    ),
    one("ns-default-not-adopted", "teams[0].adoptNamespace", DELETE, "always exists", "dev"),
    one("ns-not-a-label", "teams[0].namespace", "team.research", "not a valid Kubernetes name"),
]

SUBJECT = "teams[0].submitters[0]"
SA = "teams[0].submitters[1]"
RBAC = [
    *[
        one(f"group-{name}", f"{SUBJECT}.name", name, says)
        for name, says in [
            ("system:masters", "superuser group"),
            ("system:authenticated", "every authenticated user"),
            ("system:unauthenticated", "every anonymous request"),
            ("system:serviceaccounts", "every service account of the cluster"),
            ("system:serviceaccounts:kube-system", "every service account of namespace"),
            ("system:serviceaccounts:team-vision", "every service account of namespace"),
            ("system:nodes", "every node's kubelet"),
            ("system:monitoring", "monitoring"),
            ("system:bootstrappers", "reserves for Kubernetes' own users and groups"),
        ]
    ],
    *[
        case(
            f"user-{plain(name)}",
            f"{SUBJECT}.name",
            says,
            (f"{SUBJECT}.kind", "User"),
            (f"{SUBJECT}.name", name),
        )
        for name, says in [
            ("system:anonymous", "every anonymous request"),
            ("system:kube-controller-manager", "control-plane component"),
            ("system:kube-scheduler", "control-plane component"),
            ("system:kube-proxy", "control-plane component"),
            ("system:serviceaccount:kube-system:default", "use kind: ServiceAccount"),
            ("system:node:gpu-node-1", "a node's kubelet"),
            ("system:admin", "reserves for Kubernetes' own users and groups"),
            (" alice", "surrounding whitespace or control characters"),
            ("bob\n", "surrounding whitespace or control characters"),
            ("carol\u200b", "surrounding whitespace or control characters"),
            ("dave\x00", "surrounding whitespace or control characters"),
            ("\t", "surrounding whitespace or control characters"),
        ]
    ],
    one("group-namespace", f"{SUBJECT}.namespace", "team-research", "only to ServiceAccount"),
    case(
        "user-namespace",
        f"{SUBJECT}.namespace",
        "silently dropped",
        (f"{SUBJECT}.kind", "User"),
        (f"{SUBJECT}.namespace", "kube-system"),
    ),
    one("subject-empty-name", f"{SUBJECT}.name", "", "at least 1 character"),
    one("subject-bad-kind", f"{SUBJECT}.kind", "Role", "'User', 'Group' or 'ServiceAccount'"),
    *[
        one(f"sa-name-{i}", f"{SA}.name", name, "not a valid ServiceAccount name")
        for i, name in enumerate(
            ["Pipeline", "pipe line", "pipe_line", "-pipe", "a" * 254, "system:pipeline", "x/y"]
        )
    ],
    *[
        one(f"sa-namespace-{ns}", f"{SA}.namespace", ns, says)
        for ns, says in [
            ("kube-system", "belongs to the cluster"),
            ("kube-public", "belongs to the cluster"),
            ("kueue-system", "created by the Kueue release manifest"),
            ("kube-ci", "kube- prefix is reserved"),
            ("default", "shared by everyone who can run pods there"),
            ("team-vision", "belongs to the team at teams[1]"),
            ("team-nlp", "could then spend this team's quota"),
        ]
    ],
]

WHOLE = "only whole numbers"
EXTENDED = [
    *[
        one(f"gpu-nominal-{value!r}", f"{GPU}.nominalQuota", value, WHOLE)
        for value in (0.5, "100m", 3.5, "1500m", "0.5", "15e-1")
    ],
    one("gpu-borrowing-half", f"{GPU}.borrowingLimit", 0.5, WHOLE),
    one("gpu-lending-500m", f"{GPU}.lendingLimit", "500m", WHOLE),
    one("gpu-per-node-half", "flavors[1].nodes.resources['nvidia.com/gpu']", 0.5, WHOLE),
    one("gpu-capacity-7.5", "flavors[0].capacity['nvidia.com/gpu']", 7.5, WHOLE, "dev"),
    one("gpu-capacity-100m", "flavors[0].capacity['nvidia.com/gpu']", "100m", WHOLE, "dev"),
    one(
        "controller-gpu-limit",
        "kueue.controller.resources.limits['nvidia.com/gpu']",
        0.5,
        WHOLE,
    ),
    case(
        "other-vendor-fraction",
        "teams[0].resourceGroups[0].flavors[0].resources['example.com/fpga'].nominalQuota",
        WHOLE,
        ("teams[0].resourceGroups[0].coveredResources[3]", "example.com/fpga"),
        (
            "teams[0].resourceGroups[0].flavors[0].resources['example.com/fpga']",
            {"nominalQuota": 1.5},
        ),
        base="dev",
    ),
]

STORAGE = [
    *[
        one(f"size-{value!r}", "sharedStorage[0].size", value, says)
        for value, says in [
            (0, "above zero"),
            ("0", "above zero"),
            ("0Gi", "above zero"),
            (-1, "above zero"),
            ("-5Gi", "above zero"),
            ("0.5", "whole number of bytes"),
            ("100m", "whole number of bytes"),
            ("lots", "a Kubernetes quantity"),
        ]
    ],
]

OBJECT_NAME = "not a valid Kubernetes object name"
NAMES = [
    *[
        one(f"storage-class-{i}", "sharedStorage[0].storageClass", v, OBJECT_NAME)
        for i, v in enumerate(["Shared_Weka", "shared weka", "", "a/b", "-x"])
    ],
    one("claim-name", "sharedStorage[0].claimName", "Shared-PVC", OBJECT_NAME),
    one("volume-name", "sharedStorage[0].volumeName", "vol/1", OBJECT_NAME),
    one("cluster-queue-name", "teams[0].clusterQueue", "Research CQ", OBJECT_NAME),
    one("local-queue-too-long", "teams[0].localQueue", "q" * 64, "at most 63 characters"),
    one("local-queue-name", "teams[0].localQueue", "Gpu_Queue", OBJECT_NAME),
    one("local-queue-dot", "teams[0].localQueue", "gpu.queue.", OBJECT_NAME),
    one("flavor-name", "flavors[0].name", "H100", OBJECT_NAME),
    one("cohort-name", "cohort.name", "gpu pool", OBJECT_NAME),
    one("team-name", "teams[0].name", "Research", "not a valid Kubernetes name"),
    one("node-label-key", "flavors[0].nodeLabels['bad key']", "x", "valid resource or label key"),
    one(
        "node-label-value",
        "flavors[0].nodeLabels['nvidia.com/gpu.product']",
        "H100 80GB",
        "not a valid label value",
    ),
    one("taint-key", "flavors[0].nodeTaints[0].key", "a/b/c", "valid resource or label key"),
    one(
        "feature-gate-injection",
        "kueue.manager.featureGates['Foo=true,Bar']",
        True,
        "not a Kueue feature gate name",
    ),
    one(
        "feature-gate-lowercase",
        "kueue.manager.featureGates.partialAdmission",
        True,
        "not a Kueue feature gate name",
    ),
    case(
        "label-key-to-copy",
        "kueue.manager.integrations.labelKeysToCopy[0]",
        "valid resource or label key",
        ("kueue.manager.integrations.labelKeysToCopy", ["a/b/c"]),
    ),
    one(
        "covered-resource-name",
        "teams[0].resourceGroups[0].coveredResources[0]",
        "CPU s",
        "valid resource or label key",
    ),
]

FRAMEWORKS = "kueue.manager.integrations.frameworks"
NAMES += [
    one("framework-unknown", f"{FRAMEWORKS}[1]", "jobset.x-k8s.io/jobsets", "not a Kueue v0"),
    one("framework-twice", f"{FRAMEWORKS}[2]", "batch/job", "listed twice"),
    case(
        "external-framework",
        "kueue.manager.integrations.externalFrameworks[0]",
        "Kind.version.group",
        ("kueue.manager.integrations.externalFrameworks", ["MyJob"]),
    ),
]

# Values Kueue or the API server would refuse (issue 42, class 4): a WorkloadPriorityClass no
# job can name (its name is a label value), and a Go duration past time.Duration's 292 years
# (Kueue's Configuration would not load, so the controller would never start).
WAIT = "kueue.manager.waitForPodsReady"
NAMES += [
    case(
        "priority-class-too-long",
        "priorityClasses[0].name",
        "too long for a WorkloadPriorityClass: jobs name it in the kueue.x-k8s.io/priority-class",
        ("priorityClasses", [{"name": "p" * 64, "value": 100}]),
    ),
    case(
        "priority-class-name",
        "priorityClasses[0].name",
        OBJECT_NAME,
        ("priorityClasses", [{"name": "High Priority", "value": 100}]),
    ),
    one("duration-past-go", f"{WAIT}.timeout", "2562048h", "longer than Go's time.Duration"),
    one("duration-past-go-2", f"{WAIT}.timeout", "9" * 30 + "s", "longer than Go's time.Dur"),
    one("duration-not-go", f"{WAIT}.timeout", "1d", "not a Go duration"),
]

URL = "kueue.manifest.url"


def url(id: str, value: str, says: str) -> Case:
    """The manifest fetched from `value` instead of the stack's own source."""
    return case(id, URL, says, ("kueue.manifest", {"url": value}))


MANIFEST = [
    url("http-without-sha", "http://mirror.example/manifests.yaml", "without TLS"),
    url("http-upper", "HTTP://mirror.example/manifests.yaml", "must start with https://"),
    url("credentials", "https://user:secret@mirror.example/m.yaml", "carries credentials"),
    url("token-user", "https://ghp_token@mirror.example/m.yaml", "carries credentials"),
    url("no-host", "https:///manifests.yaml", "has no host"),
    url("http-no-host", "http:///manifests.yaml", "has no host"),
    url("file-remote-host", "file://fileserver/share/m.yaml", "names host 'fileserver'"),
    url("ftp", "ftp://mirror.example/m.yaml", "must start with https://"),
    url("javascript", "javascript:alert(1)", "must start with https://"),
    url("newline", "https://mirror.example/m.yaml\n", "whitespace or control characters"),
    url("space", "https://mirror.example/m .yaml", "whitespace or control characters"),
    case(
        "url-and-path",
        "kueue.manifest",
        "set either url or path, not both",
        (URL, "https://mirror.example/m.yaml"),
        ("kueue.manifest.path", "m.yaml"),
    ),
    one("sha-not-hex", "kueue.manifest.sha256", "z" * 64, "64 lowercase hex digits"),
]

NODES = [
    *[
        one(f"node-count-{value!r}", "flavors[1].nodes.count", value, says)
        for value, says in [
            (0, "1 or more"),
            (-1, "1 or more"),
            (2.5, "whole number of nodes"),
            ("4", "whole number of nodes"),
            (True, "whole number of nodes"),
            (None, "whole number of nodes"),
        ]
    ],
    one("node-resources-empty", "flavors[1].nodes.resources", {}, "at least 1 item"),
    one("node-resources-missing", "flavors[1].nodes.resources", DELETE, "required key"),
    one("node-unknown-key", "flavors[1].nodes.gpus", 8, "unknown key 'gpus'"),
    case(
        "capacity-disagrees",
        "flavors[0].capacity['nvidia.com/gpu']",
        "capacity nvidia.com/gpu is 24 but the nodes add up to 4 nodes x 8 = 32",
        ("flavors[0].capacity", {"cpu": 768, "memory": "8Ti", "nvidia.com/gpu": 24}),
    ),
    case(
        "capacity-disagrees-key",
        "flavors[0].capacity['nvidia.com/gpu']",
        "the nodes add up to 4 nodes x 8 = 32",
        ("flavors[0].capacity", {"cpu": 768, "memory": "8Ti", "nvidia.com/gpu": 40}),
    ),
    case(
        "nodes-shrink",
        "flavors[0].nodes.resources['nvidia.com/gpu']",
        "add up to 32 (research 16, vision 6, nlp 6, cohort reserve 4), above the "
        "declared capacity 24",
        ("flavors[0].nodes.count", 3),
    ),
    case(
        "per-node-memory-shrinks",
        "flavors[0].nodes.resources.memory",
        "above the declared capacity",
        ("flavors[0].nodes.resources.memory", "1Ti"),
    ),
]

TOLERATION = "flavors[0].tolerations[0]"
FLAVOR_CEL = [
    case(
        "toleration-exists-with-value",
        f"{TOLERATION}.value",
        "operator is Exists",
        (f"{TOLERATION}.value", "present"),
    ),
    case(
        "toleration-no-key-equal",
        f"{TOLERATION}.operator",
        "needs operator Exists",
        (TOLERATION, {"operator": "Equal", "value": "x", "effect": "NoSchedule"}),
    ),
    case(
        "toleration-no-key-no-operator",
        f"{TOLERATION}.operator",
        "needs operator Exists",
        (TOLERATION, {"effect": "NoSchedule"}),
    ),
    case(
        "toleration-seconds-not-noexecute",
        f"{TOLERATION}.tolerationSeconds",
        "effect is not NoExecute",
        (f"{TOLERATION}.tolerationSeconds", 30),
    ),
    case(
        "taint-twice",
        "flavors[0].nodeTaints[1]",
        "already nodeTaints[0]",
        (
            "flavors[0].nodeTaints[1]",
            {"key": "nvidia.com/gpu", "value": "other", "effect": "NoSchedule"},
        ),
    ),
    one("taint-effect", "flavors[0].nodeTaints[0].effect", "Evict", "'NoSchedule'"),
    one("toleration-operator", f"{TOLERATION}.operator", "In", "'Exists' or 'Equal'"),
    one(
        "nine-node-labels",
        "flavors[0].nodeLabels",
        {f"example.com/l{i}": "x" for i in range(9)},
        "at most 8 items",
    ),
]

QUOTAS = [
    one("lending-above-nominal", f"{GPU}.lendingLimit", 17, "above nominalQuota 16"),
    one("negative-nominal", f"{GPU}.nominalQuota", -1, "must not be negative"),
    one("not-a-quantity", f"{GPU}.nominalQuota", "eight", "must be a Kubernetes quantity"),
    one("nominal-missing", f"{GPU}.nominalQuota", DELETE, "required key is missing"),
    case(
        "limit-without-cohort",
        f"{GPU}.borrowingLimit",
        "needs a cohort to borrow from or lend to, and the team has no cohort",
        ("teams[0].cohort", DELETE),
    ),
    case(
        "borrow-without-reclaim",
        "teams[0].preemption.borrowWithinCohort.policy",
        "reclaimWithinCohort is not set (Kueue defaults it to Never)",
        ("teams[0].preemption.reclaimWithinCohort", DELETE),
    ),
    case(
        "borrow-with-reclaim-never",
        "teams[0].preemption.borrowWithinCohort.policy",
        "reclaimWithinCohort is Never",
        ("teams[0].preemption.reclaimWithinCohort", "Never"),
    ),
    one(
        "flavor-undeclared",
        "teams[0].resourceGroups[0].flavors[0].name",
        "h200",
        "is not declared (declared: a100, h100)",
    ),
    one(
        "flavor-twice",
        "teams[0].resourceGroups[0].flavors[1].name",
        "h100",
        "already appears in this resource group",
    ),
    one(
        "covered-twice",
        "teams[0].resourceGroups[0].coveredResources[2]",
        "cpu",
        "already covered by this resource group",
    ),
    case(
        "quota-not-covered",
        "teams[0].resourceGroups[0].flavors[0].resources['example.com/nic']",
        "not in coveredResources",
        (
            "teams[0].resourceGroups[0].flavors[0].resources['example.com/nic']",
            {"nominalQuota": 1},
        ),
    ),
    case(
        "quota-missing",
        "teams[0].resourceGroups[0].flavors[0].resources",
        "no quota for covered resource 'memory'",
        ("teams[0].resourceGroups[0].flavors[0].resources.memory", DELETE),
    ),
    case(
        "gpu-only",
        "teams[0].resourceGroups",
        "never admitted",
        ("teams[0].resourceGroups[0].coveredResources", ["nvidia.com/gpu"]),
    ),
    case(
        "quota-over-capacity",
        "flavors[0].nodes.resources['nvidia.com/gpu']",
        "add up to 33 (research 17, vision 6, nlp 6, cohort reserve 4), above the "
        "declared capacity 32",
        (f"{GPU}.nominalQuota", 17),
    ),
    one("cohort-undeclared", "teams[1].cohort", "gpu-poool", "is not declared"),
    one("queueing-strategy", "teams[0].queueingStrategy", "FIFO", "'BestEffortFIFO' or"),
    one("seventeen-groups", "teams[0].resourceGroups", [{}] * 17, "at most 16 items"),
]

CASES = [*NAMESPACES, *RBAC, *EXTENDED, *STORAGE, *NAMES, *MANIFEST, *NODES, *FLAVOR_CEL, *QUOTAS]


def test_case_ids_are_unique():
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("hostile", CASES, ids=lambda c: c.id)
def test_hostile_config_is_refused_naming_the_key_before_any_resource(hostile: Case, capsys):
    raw = hostile.raw()
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    here = [p.message for p in info.value.problems if p.path == f"gpu-queues:{hostile.at}"]
    assert here, f"nothing at {hostile.at}: {info.value.messages}"
    assert any(hostile.says in m for m in here), here
    # The real program refuses it too, with the same key, and registers nothing.
    code, run = _run_program(raw)
    assert code == 32  # the language host's "error already shown" exit
    assert run.resources == []
    assert f"gpu-queues:{hostile.at}: " in capsys.readouterr().err


def _run_program(raw: dict[str, Any]) -> tuple[int | str | None, MockRun]:
    """The real program (__main__.py) under Pulumi mocks, with `raw` as its stack config."""
    run = MockRun()
    pulumi.runtime.set_mocks(mocks_for(run), project=keys.PROJECT, stack="hostile", preview=True)
    pulumi.runtime.set_all_config({f"{keys.PROJECT}:{k}": json.dumps(v) for k, v in raw.items()})
    try:
        runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")
    except SystemExit as stop:
        return stop.code, run
    return None, run


def _at(node: Any, path: str) -> Any:
    for part in _parts(path):
        node = node[part]
    return node


@pytest.mark.parametrize(
    ("base", "edits", "means"),
    [
        ("dev", [("teams[0].namespace", "default")], None),  # the guide's adopted default
        ("prod", [(f"{SUBJECT}.name", "system:serviceaccounts:team-research")], None),  # own ns
        ("prod", [(f"{SA}.namespace", "ci-pipelines")], None),  # a namespace outside the stack
        ("prod", [(f"{SUBJECT}.name", "oidc:ML Engineers")], None),  # inner spaces are real
        ("prod", [(f"{GPU}.nominalQuota", "16000m")], 16),  # a whole number, in milli-units
        (
            "prod",
            [("kueue.manifest", {"url": "http://mirror.example/m", "sha256": "0" * 64})],
            None,
        ),
        ("prod", [("kueue.manifest", {"url": "file:///srv/kueue/manifests.yaml"})], None),
        ("prod", [("sharedStorage[0].size", "1")], 1),  # one byte
        ("prod", [("priorityClasses", [{"name": "p" * 63, "value": 1}])], None),
        ("prod", [(f"{WAIT}.timeout", "2562047h")], None),  # just within time.Duration
    ],
)
def test_near_misses_are_accepted(base, edits, means):
    raw = copy.deepcopy(stack_raw(base))
    for path, value in edits:
        edit(raw, path, value)
    config = load_config(raw)
    # Accepted as written: the model holds the value (not dropped, not replaced by a default).
    held = config.model_dump(by_alias=True, exclude_none=True)
    for path, value in edits:
        assert _at(held, path) == value, path
        if means is not None:  # and a quantity means what it says
            assert parse_quantity(_at(held, path)) == means, path


def test_a_quota_in_milli_units_is_the_whole_number_it_spells():
    raw = copy.deepcopy(stack_raw("prod"))
    edit(raw, f"{GPU}.nominalQuota", "16000m")
    config = load_config(raw)
    # research's 16 H100 GPUs: the flavor's 32 are still exactly used (16 + 6 + 6 and the
    # reserve's 4), and Kueue is given the quantity as written.
    cq = render.cluster_queue(config.teams[0])
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2] == {
        "name": "nvidia.com/gpu",
        "nominalQuota": "16000m",
        "borrowingLimit": "8",
        "lendingLimit": "8",
    }
    totals = quota_totals(
        [*(render.cluster_queue(t) for t in config.teams), *render.cohorts(config)]
    )
    assert totals.total(("h100", "nvidia.com/gpu")) == 32
    # One milli-GPU more is no longer the whole number the capacity holds.
    edit(raw, f"{GPU}.nominalQuota", "16001m")
    with pytest.raises(ConfigError) as info:
        load_config(raw)
    assert any(
        m.startswith(f"gpu-queues:{GPU}.nominalQuota: ")
        and "Kubernetes allows only whole numbers of it" in m
        for m in info.value.messages
    ), info.value.messages
    assert any("add up to 32001m" in m for m in info.value.messages), info.value.messages


def test_namespaces_the_kueue_manifest_creates_are_refused_once_it_is_known():
    from gpu_queues.config.subjects import reserved_namespace_problems

    raw = copy.deepcopy(stack_raw("prod"))
    edit(raw, "teams[1].namespace", "kueue-metrics")
    edit(raw, "sharedStorage[1].namespace", "kueue-metrics")
    edit(raw, f"{SA}.namespace", "kueue-webhooks")
    config = load_config(raw)  # without the manifest, nothing says they are Kueue's
    assert reserved_namespace_problems(config) == []
    problems = reserved_namespace_problems(config, extra={"kueue-metrics", "kueue-webhooks"})
    assert [(p.path, "created by the Kueue release manifest" in p.message) for p in problems] == [
        ("gpu-queues:teams[0].submitters[1].namespace", True),
        ("gpu-queues:teams[1].namespace", True),
    ]
