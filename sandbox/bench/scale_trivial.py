"""The trivial program of the scale benchmark: one namespace and `count` plain ConfigMaps.

It runs as the `__main__.py` of a throw-away Pulumi project (sandbox.bench.scale writes it
under .sandbox/bench/trivial), with the same CLI, provider and file backend as gpu-queues, so
what it costs per object is the floor below our program. Config: `count` (ConfigMaps),
`namespace`, optionally `renderDir` (the provider writes YAML files there instead of talking
to a cluster, which leaves only the engine, the SDK and the backend) and `settle` (true: the
workaround for the Python SDK's quadratic wait, as in the project's __main__.py). With those
two it is the reproduction of the upstream causes in docs/scale.md.

`register_shaped` is the same floor for objects shaped like ours: per team the seven objects
gpu-queues registers (a Namespace, a ClusterQueue and LocalQueue as CustomResources, a Role,
RoleBinding, ClusterRole and ClusterRoleBinding), plus a ResourceFlavor and a Cohort, with the
same types, the same properties and nesting, the same options and the same dependencies
between them, but flat: no component resources, no readiness gate, no Outputs of its own, no
config model. The program under mocks against it is the cost of our structure; it against the
plain ConfigMaps is the SDK's cost of the objects' shape (docs/scale.md). Config `shape: true`
with `teams` and `prefix`.
"""

from __future__ import annotations

import asyncio

import pulumi
import pulumi_kubernetes as k8s


def register(count: int, namespace: str, render_dir: str | None = None) -> int:
    """Register the namespace and `count` ConfigMaps; returns how many objects that is."""
    provider = k8s.Provider(
        "k8s",
        enable_server_side_apply=True,
        render_yaml_to_directory=render_dir,
    )
    ns = k8s.core.v1.Namespace(
        "ns",
        metadata={"name": namespace},
        opts=pulumi.ResourceOptions(provider=provider),
    )
    for i in range(count):
        k8s.core.v1.ConfigMap(
            f"cm-{i:04d}",
            metadata={"name": f"cm-{i:04d}", "namespace": namespace},
            data={"index": str(i)},
            opts=pulumi.ResourceOptions(provider=provider, depends_on=[ns]),
        )
    return count + 1


RBAC = "rbac.authorization.k8s.io"


def register_shaped(teams: int, prefix: str, render_dir: str | None = None) -> int:
    """The objects of a `teams`-team gpu-queues stack (sandbox.bench.scale.team_config), flat.
    Returns how many objects that is (7 per team, the flavor and the cohort)."""
    provider = k8s.Provider(
        "k8s", enable_server_side_apply=True, render_yaml_to_directory=render_dir
    )
    under = pulumi.ResourceOptions(provider=provider)
    flavor, pool = f"{prefix}-gpu", f"{prefix}-pool"
    uses = _flavor_and_cohort(teams, flavor, pool, under)
    for i in range(teams):
        team = f"{prefix}-t{i:03d}"
        subjects = [{"kind": "User", "name": f"user-{prefix}-{i:03d}", "apiGroup": RBAC}]
        ns = _team_queues(team, flavor, pool, uses, under)
        _team_rbac(team, subjects, ns, under)
    return 7 * teams + 2


def _labels(team: str | None = None) -> dict[str, str]:
    """Our labels, the very ones the program sets (imported here: the plain trivial program
    runs as a project of its own, where the components are not importable)."""
    from gpu_queues.keys import LABEL_MANAGED_BY, LABEL_TEAM, PROJECT

    managed = {LABEL_MANAGED_BY: PROJECT}
    return managed if team is None else {**managed, LABEL_TEAM: team}


def _flavor_and_cohort(
    teams: int, flavor: str, pool: str, under: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    from gpu_queues.keys import KUEUE_API_VERSION as KUEUE

    managed = _labels()
    capacity = f'{{"cpu":"{teams}","memory":"{4 * teams}Gi","nvidia.com/gpu":"{teams}"}}'
    return [
        k8s.apiextensions.CustomResource(
            f"flavor-{flavor}",
            api_version=KUEUE,
            kind="ResourceFlavor",
            metadata={
                "name": flavor,
                "labels": managed,
                "annotations": {"gpu-queues.dev/capacity": capacity},
            },
            opts=under,
        ),
        k8s.apiextensions.CustomResource(
            f"cohort-{pool}",
            api_version=KUEUE,
            kind="Cohort",
            metadata={"name": pool, "labels": managed},
            spec={},
            opts=under,
        ),
    ]


def _team_queues(
    team: str, flavor: str, pool: str, uses: list[pulumi.Resource], under: pulumi.ResourceOptions
) -> k8s.core.v1.Namespace:
    """The team's namespace, ClusterQueue and LocalQueue; returns the namespace."""
    from gpu_queues.keys import KUEUE_API_VERSION as KUEUE

    labels = _labels(team)
    ns = k8s.core.v1.Namespace(
        f"{team}-namespace", metadata={"name": team, "labels": labels}, opts=under
    )
    quotas = [
        {"name": "cpu", "nominalQuota": "1"},
        {"name": "memory", "nominalQuota": "4Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": "1", "borrowingLimit": "1"},
    ]
    cq = k8s.apiextensions.CustomResource(
        f"{team}-clusterqueue",
        api_version=KUEUE,
        kind="ClusterQueue",
        metadata={"name": f"{team}-cq", "labels": labels},
        spec={
            "cohortName": pool,
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                    "flavors": [{"name": flavor, "resources": quotas}],
                }
            ],
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "Never"},
        },
        opts=under.merge(pulumi.ResourceOptions(depends_on=[ns, *uses])),
    )
    k8s.apiextensions.CustomResource(
        f"{team}-localqueue",
        api_version=KUEUE,
        kind="LocalQueue",
        metadata={"name": "queue", "namespace": team, "labels": labels},
        spec={"clusterQueue": f"{team}-cq"},
        opts=under.merge(
            pulumi.ResourceOptions(
                depends_on=[ns, cq],
                replace_on_changes=["spec.clusterQueue"],
                delete_before_replace=True,
            )
        ),
    )
    return ns


def _team_rbac(
    team: str,
    subjects: list[dict[str, str]],
    ns: k8s.core.v1.Namespace,
    under: pulumi.ResourceOptions,
) -> None:
    """The submitters' Role and RoleBinding in the namespace, the queue reader's ClusterRole
    and ClusterRoleBinding."""
    from gpu_queues.components.queues import SUBMIT_RULES

    labels = _labels(team)
    submit = {"name": "gpu-queues-submit", "namespace": team, "labels": labels}
    role = k8s.rbac.v1.Role(
        f"{team}-submit-role",
        metadata=submit,
        rules=SUBMIT_RULES,
        opts=under.merge(pulumi.ResourceOptions(depends_on=[ns])),
    )
    k8s.rbac.v1.RoleBinding(
        f"{team}-submit-binding",
        metadata=submit,
        role_ref={"apiGroup": RBAC, "kind": "Role", "name": "gpu-queues-submit"},
        subjects=subjects,
        opts=under.merge(pulumi.ResourceOptions(depends_on=[role])),
    )
    reader = f"gpu-queues-{team}-queue-reader"
    cluster_role = k8s.rbac.v1.ClusterRole(
        f"{team}-queue-reader-role",
        metadata={"name": reader, "labels": labels},
        rules=[
            {
                "apiGroups": ["kueue.x-k8s.io"],
                "resources": ["clusterqueues"],
                "resourceNames": [f"{team}-cq"],
                "verbs": ["get", "watch"],
            },
            {
                "apiGroups": ["kueue.x-k8s.io"],
                "resources": ["resourceflavors"],
                "verbs": ["get", "list", "watch"],
            },
        ],
        opts=under,
    )
    k8s.rbac.v1.ClusterRoleBinding(
        f"{team}-queue-reader-binding",
        metadata={"name": reader, "labels": labels},
        role_ref={"apiGroup": RBAC, "kind": "ClusterRole", "name": reader},
        subjects=subjects,
        opts=under.merge(pulumi.ResourceOptions(depends_on=[cluster_role])),
    )


async def _settle() -> None:
    await asyncio.sleep(0)


if __name__ == "__main__":
    config = pulumi.Config()
    if config.get_bool("shape"):
        register_shaped(
            config.require_int("teams"), config.require("prefix"), config.get("renderDir")
        )
    else:
        register(config.require_int("count"), config.require("namespace"), config.get("renderDir"))
    if config.get_bool("settle"):
        pulumi.run(_settle)
