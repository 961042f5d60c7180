"""Stack files nobody has written, for rehearsals: random names, flavors (GPU ones and a CPU
pool, labelled or not, tainted or not, node shapes or totals), node counts, teams of three
kinds (one group with GPUs, CPU only, CPU and GPUs in separate groups), several flavors per
group, a cohort with borrowing and lending limits or none, submitters or none, adopted
namespaces and shared volumes. Quotas per flavor add up to at most its capacity, so the
config check accepts every one (tests/unit/sandbox/test_rehearse_plan.py asserts it)."""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

import yaml

GPUS = ("nvidia.com/gpu", "amd.com/gpu", "example.org/npu")


class Names:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.taken: set[str] = set()

    def __call__(self, prefix: str) -> str:
        """A fresh DNS label: lowercase letters and digits, '-' inside."""
        alphabet = string.ascii_lowercase + string.digits
        while True:
            body = "".join(self.rng.choice(alphabet + "-") for _ in range(self.rng.randint(2, 9)))
            name = f"{prefix}{body.strip('-')}{self.rng.choice(alphabet)}"
            if name not in self.taken:
                self.taken.add(name)
                return name


def gib(n: int) -> str | int:
    """n GiB as the API server writes it back: a quantity in any other spelling (2048Gi for
    2Ti, 0Gi for 0) comes back from Kueue's webhook canonical, and every later preview then
    shows a change (a program issue the rehearsal finds; reported, not this generator's job)."""
    if n == 0:
        return 0
    return f"{n // 1024}Ti" if n % 1024 == 0 else f"{n}Gi"


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """`parts` whole numbers >= 0 adding up to at most `total`."""
    cuts = sorted(rng.randint(0, total) for _ in range(parts - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]


def rehearsal_stack(seed: int, cohort: bool) -> dict[str, Any]:
    """A valid stack config (the `gpu-queues:*` keys without the prefix)."""
    rng = random.Random(seed)
    name = Names(rng)
    gpu = rng.choice(GPUS)

    label = f"{name('l')}.example.com/accelerator"  # one key, a value per GPU model
    flavors: list[dict[str, Any]] = []
    hardware: dict[str, dict[str, int]] = {}  # flavor -> resource -> capacity (memory in Gi)
    per_node: dict[str, dict[str, int]] = {}
    for i in range(rng.randint(2, 3)):
        f: dict[str, Any] = {"name": name("gpu-")}
        node = {
            "cpu": rng.choice([32, 64, 96]),
            "memory": rng.choice([128, 256, 512]),
            gpu: rng.choice([2, 4, 8]),
        }
        # The first GPU flavor spans nodes, so some team's quota can exceed one node.
        count = rng.randint(2, 4) if i == 0 else rng.randint(1, 3)
        if i == 0 or rng.random() < 0.6:
            f["nodeLabels"] = {label: name("v")}
        if rng.random() < 0.5:
            key = f"{name('t')}.example.com/dedicated"
            f["nodeTaints"] = [{"key": key, "value": name("v"), "effect": "NoSchedule"}]
            f["tolerations"] = [{"key": key, "operator": "Exists", "effect": "NoSchedule"}]
        resources = {"cpu": node["cpu"], "memory": gib(node["memory"]), gpu: node[gpu]}
        if i == 0 or rng.random() < 0.7:
            f["nodes"] = {"count": count, "resources": resources}
        else:  # totals only: the sandbox makes one node holding them
            count, node = 1, {r: v * count for r, v in node.items()}
            f["capacity"] = {"cpu": node["cpu"], "memory": gib(node["memory"]), gpu: node[gpu]}
        flavors.append(f)
        per_node[f["name"]] = node
        hardware[f["name"]] = {r: v * count for r, v in node.items()}
    pool: dict[str, Any] = {"name": name("cpu-")}
    pool_node = {"cpu": rng.choice([16, 32]), "memory": rng.choice([64, 128])}
    pool_count = rng.randint(1, 3)
    pool["nodes"] = {
        "count": pool_count,
        "resources": {"cpu": pool_node["cpu"], "memory": gib(pool_node["memory"])},
    }
    flavors.append(pool)
    hardware[pool["name"]] = {r: v * pool_count for r, v in pool_node.items()}
    gpu_flavors = [f["name"] for f in flavors if f is not pool]

    # Team kinds: one group with GPUs (several flavors), CPU only, CPU and GPUs apart.
    kinds = ["gpu", rng.choice(["cpu", "split"]), *rng.sample(["gpu", "cpu", "split"], 1)]
    kinds = kinds[: rng.randint(2, 3)]
    if "split" not in kinds and rng.random() < 0.5:
        # Its nodes are their own: pods asking cpu there and GPUs elsewhere could run nowhere.
        pool["nodeLabels"] = {"node.example.com/pool": name("cpu")}
    users: dict[tuple[str, str], list[str]] = {}  # (flavor, resource) -> teams using it
    layouts: list[list[tuple[list[str], list[str]]]] = []  # per team: (covered, flavors)
    for t, kind in enumerate(kinds):
        order = rng.sample(gpu_flavors, len(gpu_flavors))
        if kind == "gpu":
            groups = [(["cpu", "memory", gpu], order)]
        elif kind == "cpu":
            groups = [(["cpu", "memory"], [pool["name"]])]
        else:
            groups = [(["cpu", "memory"], [pool["name"]]), ([gpu], order)]
        layouts.append(groups)
        for covered, names in groups:
            for fl in names:
                for r in covered:
                    users.setdefault((fl, r), []).append(str(t))
    shares: dict[tuple[str, str, str], int] = {}
    for (fl, r), teams in users.items():
        total = hardware[fl][r]
        split = _split(rng, total, len(teams))
        if fl == gpu_flavors[0] and r == gpu and total > per_node[fl][r]:
            # One team gets more than a node of it: the one-pod-bigger-than-a-node case.
            rest = total - per_node[fl][r] - 1
            split = [per_node[fl][r] + 1, *(_split(rng, rest, len(teams) - 1) if teams[1:] else [])]
        for team, amount in zip(teams, split, strict=True):
            shares[fl, r, team] = amount

    cohort_name = name("pool-") if cohort else None
    teams = []
    for t, groups in enumerate(layouts):
        resource_groups = []
        for covered, names in groups:
            group_flavors = []
            for fl in names:
                quotas: dict[str, Any] = {}
                for r in covered:
                    n = shares[fl, r, str(t)]
                    quota: dict[str, Any] = {"nominalQuota": gib(n) if r == "memory" else n}
                    if cohort_name and rng.random() < 0.6:
                        limit = rng.randint(0, 6)
                        quota["borrowingLimit"] = gib(limit) if r == "memory" else limit
                    if cohort_name and rng.random() < 0.4:
                        lend = rng.randint(0, n)
                        quota["lendingLimit"] = gib(lend) if r == "memory" else lend
                    quotas[r] = quota
                group_flavors.append({"name": fl, "resources": quotas})
            resource_groups.append({"coveredResources": covered, "flavors": group_flavors})
        team: dict[str, Any] = {
            "name": name("t"),
            "namespace": name("ns-"),
            "clusterQueue": name("cq-"),
            "localQueue": name("lq-"),
            "resourceGroups": resource_groups,
        }
        if rng.random() < 0.3:
            team["adoptNamespace"] = True
        if cohort_name:
            team["cohort"] = cohort_name
        if t > 0 or rng.random() < 0.5:  # the first team may have none; others some
            subjects = [
                {"kind": "Group", "name": f"oidc:{name('g')}"},
                {"kind": "User", "name": f"{name('u')}@example.com"},
                {"kind": "ServiceAccount", "name": name("sa-")},
            ]
            team["submitters"] = rng.sample(subjects, rng.randint(1, 3))
        teams.append(team)
    if all("submitters" in t for t in teams):
        del teams[0]["submitters"]

    raw: dict[str, Any] = {"flavors": flavors, "teams": teams}
    if cohort_name:
        raw["cohort"] = {"name": cohort_name}
    raw["sharedStorage"] = [
        {
            "volumeName": name("pv-"),
            "claimName": name("claim-"),
            "namespace": team["namespace"],
            "size": f"{rng.randint(1, 512)}Gi",
            "storageClass": "shared-wekafs",
            "accessMode": "ReadWriteMany",
        }
        for team in teams
        if rng.random() < 0.5
    ]
    return raw


def write_stack(raw: dict[str, Any], directory: Path, stack: str) -> Path:
    """Pulumi.<stack>.yaml holding the config under the project's keys."""
    path = directory / f"Pulumi.{stack}.yaml"
    path.write_text(
        yaml.safe_dump({"config": {f"gpu-queues:{k}": v for k, v in raw.items()}}, sort_keys=False)
    )
    return path
