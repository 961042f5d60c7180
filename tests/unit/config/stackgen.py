"""Valid stack configs no one has written: random names, flavors, node shapes, teams, cohort.

Used to check that the config check and the policy pack accept what they should (not only
the committed stacks), and as the base the hostile corpus breaks.
"""

from __future__ import annotations

import random
import string
from typing import Any

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu", "example.org/npu", "habana.ai/gaudi")


def _name(rng: random.Random, low: int = 3, high: int = 12) -> str:
    """A DNS label: lowercase letters and digits, '-' inside, never seen before."""
    alphabet = string.ascii_lowercase + string.digits
    body = "".join(rng.choice(alphabet + "-") for _ in range(rng.randint(low, high)))
    return rng.choice(string.ascii_lowercase) + body.strip("-") + rng.choice(alphabet)


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """`parts` non-negative whole numbers adding up to at most `total`."""
    cuts = sorted(rng.randint(0, total) for _ in range(parts - 1))
    shares = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
    return [max(0, s - rng.randint(0, 1)) for s in shares]


def random_stack(seed: int) -> dict[str, Any]:
    """A valid stack config (the `gpu-queues:*` keys without the prefix)."""
    rng = random.Random(seed)
    gpu = rng.choice(GPU_RESOURCES)
    taken: set[str] = set()

    def fresh(prefix: str = "") -> str:
        while True:
            name = prefix + _name(rng)
            if name not in taken and not name.startswith("kube-"):
                taken.add(name)
                return name

    flavors = []
    for _ in range(rng.randint(1, 3)):
        per_node = {
            "cpu": rng.choice([16, 32, 64, 96, 128]),
            "memory": f"{rng.choice([64, 256, 512, 1024])}Gi",
            gpu: rng.choice([1, 2, 4, 8]),
        }
        flavor: dict[str, Any] = {"name": fresh("f")}
        if rng.random() < 0.7:
            flavor["nodeLabels"] = {f"{fresh()}.example.com/{fresh()}": fresh()}
        if rng.random() < 0.5:
            key = f"{fresh()}.example.com/dedicated"
            flavor["nodeTaints"] = [{"key": key, "value": fresh(), "effect": "NoSchedule"}]
            flavor["tolerations"] = [{"key": key, "operator": "Exists", "effect": "NoSchedule"}]
        count = rng.randint(1, 6)
        if rng.random() < 0.6:
            flavor["nodes"] = {"count": count, "resources": per_node}
        else:
            flavor["capacity"] = {
                "cpu": per_node["cpu"] * count,
                "memory": f"{int(str(per_node['memory'])[:-2]) * count}Gi",
                gpu: per_node[gpu] * count,
            }
        flavor["_totals"] = {
            "cpu": per_node["cpu"] * count,
            "memory": int(str(per_node["memory"])[:-2]) * count,
            gpu: per_node[gpu] * count,
        }
        flavors.append(flavor)

    cohort = fresh("c") if rng.random() < 0.6 else None
    team_count = rng.randint(1, 4)
    shares: dict[tuple[str, str], list[int]] = {
        (f["name"], res): _split(rng, f["_totals"][res], team_count)
        for f in flavors
        for res in ("cpu", "memory", gpu)
    }
    teams = []
    for t in range(team_count):
        namespace = fresh("ns-")
        group_flavors = []
        for f in rng.sample(flavors, rng.randint(1, len(flavors))):
            quotas: dict[str, Any] = {}
            for res in ("cpu", "memory", gpu):
                nominal = shares[f["name"], res][t]
                quota: dict[str, Any] = {
                    "nominalQuota": f"{nominal}Gi" if res == "memory" else nominal
                }
                if cohort and rng.random() < 0.5:
                    quota["borrowingLimit"] = rng.randint(0, 8)
                    quota["lendingLimit"] = rng.randint(0, nominal)
                quotas[res] = quota
            group_flavors.append({"name": f["name"], "resources": quotas})
        resources = {"coveredResources": ["cpu", "memory", gpu], "flavors": group_flavors}
        team: dict[str, Any] = {
            "name": fresh("t"),
            "namespace": namespace,
            "clusterQueue": fresh("cq-"),
            "localQueue": fresh("lq-"),
            "resourceGroups": [resources],
            "submitters": [
                {"kind": "Group", "name": f"oidc:{fresh()}"},
                {"kind": "User", "name": f"{fresh()}@example.com"},
                {"kind": "ServiceAccount", "name": fresh()},
            ],
        }
        if cohort:
            team["cohort"] = cohort
            if rng.random() < 0.5:
                team["preemption"] = {
                    "reclaimWithinCohort": rng.choice(["LowerPriority", "Any"]),
                    "borrowWithinCohort": {"policy": "LowerPriority"},
                }
        if rng.random() < 0.5:
            team["queueingStrategy"] = rng.choice(["BestEffortFIFO", "StrictFIFO"])
        teams.append(team)

    for f in flavors:
        del f["_totals"]
    raw: dict[str, Any] = {"flavors": flavors, "teams": teams}
    if cohort:
        raw["cohort"] = {"name": cohort}
    storage_class = rng.choice(["shared-wekafs", fresh("sc-")])
    raw["sharedStorage"] = [
        {
            "volumeName": fresh("pv-"),
            "claimName": fresh("claim-"),
            "namespace": team["namespace"],
            "size": f"{rng.randint(1, 4096)}Gi",
            "storageClass": storage_class,
        }
        for team in teams
        if rng.random() < 0.5
    ]
    return raw
