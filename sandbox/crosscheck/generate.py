"""Stacks and mixes nobody wrote for the tests, from a seed: what the randomized cross-check
replays on both engines (sandbox/crosscheck/run.py).

Each seed gives one stack and one mix, the same on every run and machine:
- 1-3 flavors, each of 2-4 nodes of 4 or 8 GPUs with cpu and memory per GPU of its own (so a
  job's pods may fit the flavor's quota and no node yet), some tainted with the toleration in
  the flavor, as GPU pools are;
- 2-5 teams, most in one cohort (the others alone: a stack has one cohort today), each over
  one or more of the flavors in an order of its own, with nominal quotas that together may
  exceed the hardware or fall short of it, borrowing and lending limits, every preemption
  policy (reclaimWithinCohort, withinClusterQueue, borrowWithinCohort), StrictFIFO or
  BestEffortFIFO;
- 0-3 priority classes;
- 20-60 Jobs over 1-6 hours (submissions on whole minutes, so some arrive together), of 1-4
  pods of 1-8 GPUs each (at most a node's GPUs; most within what the team can reach, one in
  ten regardless), with durations from 10 minutes to 3 hours and a priority class or none.

Seeds from ORG_FROM on are organisations (issue 39): the cohort is the root of a tree of two
divisions, each team of it in one of them; a division may hold quota of its own (GPUs, with
their cpu and memory, moved from one of its teams, so the tree adds up to what the flat stack
did), lending all or part of it; and in half of them Kueue's fair sharing is on, with weights
on the divisions and on some teams (0 among them: a team that borrows only what no one else
wants). The seeds below ORG_FROM give the flat stacks they always gave.

Seeds from KINDS_FROM on mix kinds (issue 40): a multi-pod job becomes, one time in two, a
JobSet of the same pods (its workers, split into replicas of a Job of 1-2 pods each when they
divide evenly), with, one time in three, a leader of one pod and no GPU; JobSet's own
controller plays it on the sandbox, the fast engine's emulation on the other side. The seeds
below KINDS_FROM give exactly the mixes they always gave.

Seeds from EVERY_KIND_FROM on mix in every other kind both engines replay: a multi-pod job
becomes a JobSet, a pod group of plain Pods (`kueue.x-k8s.io/pod-group-name`), a
LeaderWorkerSet of one group of its pods, a StatefulSet or a Deployment of its pods as
replicas, or stays a Job; a job of one pod becomes, one time in ten, a Deployment or a
StatefulSet of one replica. The serving kinds keep the job's duration: their user deletes them
that long after they run (kube-controller-manager's controllers play them on the sandbox,
sandbox/replay/serving.py following a Deployment's pods).

Seeds from OPERATORS_FROM on also mix the kinds of the operators the sandbox runs beside Kueue
(sandbox/README.md): a multi-pod job becomes, one time in two, a PyTorchJob (a Master and
Workers), another Kubeflow v1 job (TFJob, XGBoostJob, PaddleJob, JAXJob), an MPIJob (its
workers, and a launcher of one pod and no GPU), a TrainJob (numNodes of its pods, on a
ClusterTrainingRuntime shaped as the Trainer's torch-distributed, which the mix then holds) or
a RayCluster (a worker group of its pods, and a head of one pod and no GPU); else as from
EVERY_KIND_FROM. Each kind's containers are named as its operator's webhook wants them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import yaml

from gpu_queues.pins import kueue_version

FLAVOR_NAMES = ("h100", "a100", "l40s")
TEAM_NAMES = ("nlp", "vision", "speech", "rl", "infra")
PRIORITY_NAMES = ("low", "mid", "high")
DURATIONS = (600, 1200, 2700, 3600, 7200, 10800)
COHORT = "lab"
DIVISIONS = ("lab-a", "lab-b")
ORG_FROM = 300  # seeds from here on are organisations (the module's docstring)
KINDS_FROM = 600  # seeds from here on mix JobSets in (the module's docstring)
EVERY_KIND_FROM = 700  # seeds from here on mix every kind both engines replay (the docstring)
OPERATORS_FROM = 800  # seeds from here on mix the operators' kinds too (the docstring)
RUNTIME = "torch-distributed"  # the TrainJobs' ClusterTrainingRuntime
GPU = "nvidia.com/gpu"
PREFIX = "gpu-queues"


@dataclass(frozen=True)
class Case:
    """One seed's stack file (its text, `stack` its name) and mix (its text)."""

    seed: int
    stack: str
    stack_text: str
    mix_text: str
    jobs: int


@dataclass(frozen=True)
class FlavorShape:
    name: str
    nodes: int
    gpus: int  # per node
    cpu: int  # per node
    memory_gi: int  # per node
    tainted: bool


def _flavors(r: random.Random) -> list[FlavorShape]:
    out = []
    for name in FLAVOR_NAMES[: r.randint(1, 3)]:
        gpus = r.choice((4, 8))
        out.append(
            FlavorShape(
                name,
                nodes=r.randint(2, 4),
                gpus=gpus,
                cpu=gpus * r.choice((8, 12, 16)),
                memory_gi=gpus * r.choice((64, 96, 128)),
                tainted=r.random() < 0.3,
            )
        )
    return out


def _flavor_config(f: FlavorShape) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f.name,
        "nodeLabels": {"gpu-queues.dev/pool": f.name},
        "nodes": {
            "count": f.nodes,
            "resources": {"cpu": f.cpu, "memory": f"{f.memory_gi}Gi", GPU: f.gpus},
        },
    }
    if f.tainted:
        taint = {"key": GPU, "value": "present", "effect": "NoSchedule"}
        out["nodeTaints"] = [taint]
        out["tolerations"] = [{**taint, "operator": "Equal"}]
    return out


def _shares(r: random.Random, f: FlavorShape, users: int) -> list[int]:
    """The flavor's GPUs as nominal quotas for its `users` teams: at most the hardware (the
    stack check refuses more), sometimes well short of it."""
    total = f.nodes * f.gpus
    weights = [r.uniform(0.2, 1.0) for _ in range(users)]
    used = r.uniform(0.5, 1.0)
    return [int(total * used * w / sum(weights)) for w in weights]


def _quota(r: random.Random, f: FlavorShape, gpus: int, cohort: bool) -> dict[str, Any]:
    """One flavor's quotas for one team: its GPUs (cpu and memory in proportion, so GPUs are
    what runs out), and in a cohort limits to borrow and lend."""
    gpu: dict[str, Any] = {"nominalQuota": gpus}
    if cohort and r.random() < 0.4:
        gpu["borrowingLimit"] = r.randint(0, f.nodes * f.gpus)
    if cohort and gpus and r.random() < 0.4:
        gpu["lendingLimit"] = r.randint(0, gpus)
    return {
        "name": f.name,
        "resources": {
            "cpu": {"nominalQuota": gpus * f.cpu // f.gpus},
            "memory": {"nominalQuota": f"{gpus * f.memory_gi // f.gpus}Gi"},
            GPU: gpu,
        },
    }


def _reach(quota: dict[str, Any], f: FlavorShape, cohort: bool) -> int:
    """The GPUs of one flavor a team can hold at most: its nominal quota, and in a cohort what
    it may borrow (its limit, else the flavor)."""
    gpu = quota["resources"][GPU]
    if not cohort:
        return int(gpu["nominalQuota"])
    return int(gpu["nominalQuota"]) + int(gpu.get("borrowingLimit", f.nodes * f.gpus))


def _preemption(r: random.Random, cohort: bool) -> dict[str, Any] | None:
    if r.random() < 0.2:
        return None
    out: dict[str, Any] = {
        "withinClusterQueue": r.choice(("Never", "LowerPriority", "LowerOrNewerEqualPriority"))
    }
    if cohort:
        out["reclaimWithinCohort"] = r.choice(("Never", "LowerPriority", "Any"))
        if out["reclaimWithinCohort"] != "Never" and r.random() < 0.3:
            out["borrowWithinCohort"] = {"policy": "LowerPriority"}
    return out


def _teams(r: random.Random, names: list[str], flavors: list[FlavorShape]) -> list[dict[str, Any]]:
    chosen = {n: r.sample(flavors, r.randint(1, len(flavors))) for n in names}
    shares = {
        f.name: iter(_shares(r, f, sum(f in mine for mine in chosen.values()))) for f in flavors
    }
    teams = []
    for name in names:
        cohort = r.random() < 0.8
        team: dict[str, Any] = {
            "name": name,
            "namespace": name,
            "clusterQueue": f"{name}-cq",
            "localQueue": f"{name}-lq",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", GPU],
                    "flavors": [_quota(r, f, next(shares[f.name]), cohort) for f in chosen[name]],
                }
            ],
        }
        if cohort:
            team["cohort"] = COHORT
        if preemption := _preemption(r, cohort):
            team["preemption"] = preemption
        if r.random() < 0.3:
            team["queueingStrategy"] = "StrictFIFO"
        teams.append(team)
    return teams


def _job(
    r: random.Random,
    i: int,
    team: dict[str, Any],
    shapes: dict[str, FlavorShape],
    classes: list[str],
) -> dict[str, Any]:
    quotas = team["resourceGroups"][0]["flavors"]
    mine = [shapes[f["name"]] for f in quotas]
    widest = max(mine, key=lambda f: f.gpus)
    # Most jobs fit what the team can reach (its nominal quota, or what it may borrow); one in
    # ten asks for up to a whole node regardless, and may wait all day.
    reach = max(_reach(q, shapes[q["name"]], "cohort" in team) for q in quotas)
    sizes = [g for g in (1, 2, 4, 8) if g <= widest.gpus]
    fitting = [g for g in sizes if g <= reach] or sizes[:1]
    gpus = r.choice(sizes if r.random() < 0.1 else fitting)
    pods = 1 if r.random() < 0.75 else r.randint(2, 4)
    labels = {"kueue.x-k8s.io/queue-name": team["localQueue"]}
    if classes and r.random() < 0.6:
        labels["kueue.x-k8s.io/priority-class"] = r.choice(classes)
    per_gpu_cpu = min(f.cpu // f.gpus for f in mine)
    per_gpu_mem = min(f.memory_gi // f.gpus for f in mine)
    spec: dict[str, Any] = {
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "main",
                        "image": "registry.example/train:1",
                        "resources": {
                            "requests": {
                                "cpu": str(gpus * r.randint(1, per_gpu_cpu)),
                                "memory": f"{gpus * r.randint(8, per_gpu_mem)}Gi",
                            },
                            "limits": {GPU: gpus},
                        },
                    }
                ],
            }
        }
    }
    if pods > 1:
        spec["parallelism"] = spec["completions"] = pods
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"j{i:03d}",
            "namespace": team["namespace"],
            "labels": labels,
            "annotations": {
                "gpu-queues.dev/submit-at": "",  # set by the caller, in submission order
                "gpu-queues.dev/duration": f"{r.choice(DURATIONS)}s",
            },
        },
        "spec": spec,
    }


def _jobset(r: random.Random, job: dict[str, Any]) -> dict[str, Any]:
    """The multi-pod Job as a JobSet of the same pods: workers in replicas of a Job of 1 or 2
    pods (2 when they divide evenly, one time in two), and one time in three a leader of one
    pod and no GPU (the cpu and memory of one worker)."""
    pods = int(job["spec"]["parallelism"])
    pod = job["spec"]["template"]
    per_job = 2 if pods % 2 == 0 and r.random() < 0.5 else 1
    workers: dict[str, Any] = {"template": pod}
    if per_job > 1:
        workers = {"parallelism": per_job, "completions": per_job, "template": pod}
    replicated = [{"name": "workers", "replicas": pods // per_job, "template": {"spec": workers}}]
    if r.random() < 1 / 3:
        leader = {"spec": dict(pod["spec"])}
        container = dict(leader["spec"]["containers"][0])
        requests = container["resources"]["requests"]
        container["resources"] = {"requests": dict(requests)}  # no GPU limit
        leader["spec"]["containers"] = [container]
        replicated.insert(0, {"name": "leader", "replicas": 1,
                              "template": {"spec": {"template": leader}}})  # fmt: skip
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": job["metadata"],
        "spec": {"replicatedJobs": replicated},
    }


def _serving(r: random.Random, job: dict[str, Any]) -> dict[str, Any]:
    """The Job as a Deployment or a StatefulSet of its pods as replicas (the pod template's
    restartPolicy Always, as the API wants of serving pods)."""
    name = job["metadata"]["name"]
    template = {
        "metadata": {"labels": {"app": name}},
        "spec": dict(job["spec"]["template"]["spec"]),
    }
    template["spec"]["restartPolicy"] = "Always"
    spec: dict[str, Any] = {
        "replicas": int(job["spec"].get("parallelism", 1)),
        "selector": {"matchLabels": {"app": name}},
        "template": template,
    }
    kind = r.choice(("Deployment", "StatefulSet"))
    if kind == "StatefulSet":
        spec["podManagementPolicy"] = "Parallel"  # all at once, as the fast engine makes them
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": job["metadata"], "spec": spec}


def _every_kind(r: random.Random, job: dict[str, Any]) -> list[dict[str, Any]]:
    """The Job as one of the kinds (EVERY_KIND_FROM), the same pods: the documents that stand
    for it."""
    pick = r.random()
    if job["spec"].get("parallelism", 1) == 1:
        return [_serving(r, job) if pick < 0.1 else job]
    if pick < 0.3:
        return [_jobset(r, job)]
    pods = int(job["spec"]["parallelism"])
    meta = job["metadata"]
    name = meta["name"]
    if pick < 0.5:
        # A pod group: plain Pods, each with the group's name and count.
        return [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"{name}-{k}",
                    "namespace": meta["namespace"],
                    "labels": {**meta["labels"], "kueue.x-k8s.io/pod-group-name": name},
                    "annotations": {
                        **meta["annotations"],
                        "kueue.x-k8s.io/pod-group-total-count": str(pods),
                    },
                },
                "spec": job["spec"]["template"]["spec"],
            }
            for k in range(pods)
        ]
    if pick < 0.65:
        pod = {k: v for k, v in job["spec"]["template"]["spec"].items() if k != "restartPolicy"}
        group = {"size": pods, "workerTemplate": {"spec": pod}}
        lws = {"replicas": 1, "leaderWorkerTemplate": group}
        return [{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                 "metadata": meta, "spec": lws}]  # fmt: skip
    if pick < 0.9:
        return [_serving(r, job)]
    return [job]


def _pod(job: dict[str, Any], container: str, gpus: bool = True) -> dict[str, Any]:
    """The Job's pod template for an operator's replica: its one container named `container`,
    without its GPU limit unless `gpus`, and no restartPolicy (the operator sets it)."""
    spec = {k: v for k, v in job["spec"]["template"]["spec"].items() if k != "restartPolicy"}
    main = dict(spec["containers"][0], name=container)
    if not gpus:
        main["resources"] = {"requests": dict(main["resources"]["requests"])}
    return {"spec": {**spec, "containers": [main]}}


# Each Kubeflow v1 kind: its API's replica specs field, its container's name (what its webhook
# looks for), and the replica types a job of n pods is split into (the first takes one pod).
KUBEFLOW_V1 = {
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch", ("Master", "Worker")),
    "TFJob": ("tfReplicaSpecs", "tensorflow", ("PS", "Worker")),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost", ("Master", "Worker")),
    "PaddleJob": ("paddleReplicaSpecs", "paddle", ("Master", "Worker")),
    "JAXJob": ("jaxReplicaSpecs", "jax", ("Worker",)),
}


def _kubeflow_v1(kind: str, job: dict[str, Any]) -> dict[str, Any]:
    """The multi-pod Job as a Kubeflow v1 job of the same pods."""
    field, container, types = KUBEFLOW_V1[kind]
    pods = int(job["spec"]["parallelism"])
    counts = [pods] if len(types) == 1 else [1, pods - 1]
    replicas = {
        t: {"replicas": n, "restartPolicy": "OnFailure", "template": _pod(job, container)}
        for t, n in zip(types, counts, strict=True)
    }
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": job["metadata"],
            "spec": {field: replicas}}  # fmt: skip


def _operator_kind(r: random.Random, job: dict[str, Any]) -> dict[str, Any]:
    """The multi-pod Job as one of the operators' kinds (OPERATORS_FROM)."""
    pods = int(job["spec"]["parallelism"])
    meta = job["metadata"]
    kind = r.choice(("PyTorchJob", "KubeflowV1", "MPIJob", "TrainJob", "RayCluster"))
    if kind == "PyTorchJob":
        return _kubeflow_v1(kind, job)
    if kind == "KubeflowV1":
        return _kubeflow_v1(r.choice(("TFJob", "XGBoostJob", "PaddleJob", "JAXJob")), job)
    if kind == "MPIJob":
        specs = {"Launcher": {"replicas": 1, "template": _pod(job, "launcher", gpus=False)},
                 "Worker": {"replicas": pods, "template": _pod(job, "worker")}}  # fmt: skip
        return {"apiVersion": "kubeflow.org/v2beta1", "kind": kind, "metadata": meta,
                "spec": {"mpiReplicaSpecs": specs}}  # fmt: skip
    if kind == "TrainJob":
        resources = job["spec"]["template"]["spec"]["containers"][0]["resources"]
        trainer = {"numNodes": pods, "resourcesPerNode": resources}
        return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
                "spec": {"runtimeRef": {"name": RUNTIME}, "trainer": trainer}}  # fmt: skip
    head = {"rayStartParams": {"num-gpus": "0"}, "template": _pod(job, "ray-head", gpus=False)}
    workers = {"groupName": "gpu", "replicas": pods, "minReplicas": pods, "maxReplicas": pods,
               "rayStartParams": {}, "template": _pod(job, "ray-worker")}  # fmt: skip
    return {"apiVersion": "ray.io/v1", "kind": kind, "metadata": meta,
            "spec": {"headGroupSpec": head, "workerGroupSpecs": [workers]}}  # fmt: skip


def _runtime() -> dict[str, Any]:
    """The TrainJobs' ClusterTrainingRuntime, shaped as the Trainer's torch-distributed: its
    trainer step one Job of numNodes pods running the container `node`."""
    step = {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "node", "image": "registry.example/torch:1"}]}}}}  # fmt: skip
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": RUNTIME, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                 "template": {"spec": {"replicatedJobs": [{"name": "node", "template": step}]}}},
    }  # fmt: skip


def _division_quota(r: random.Random, team: dict[str, Any]) -> dict[str, Any] | None:
    """Quota for the team's division, moved out of the team's own: half the GPUs of one of its
    flavors, with their cpu and memory (None when the team has too little to give)."""
    flavors = [
        f for f in team["resourceGroups"][0]["flavors"] if f["resources"][GPU]["nominalQuota"] >= 2
    ]
    if not flavors:
        return None
    given = r.choice(flavors)
    res = given["resources"]
    gpus = int(res[GPU]["nominalQuota"])
    moved = gpus // 2
    cpu, memory_gi = int(res["cpu"]["nominalQuota"]), int(res["memory"]["nominalQuota"][:-2])
    cpu_moved, memory_moved = cpu * moved // gpus, memory_gi * moved // gpus
    res[GPU]["nominalQuota"] = gpus - moved
    res["cpu"]["nominalQuota"] = cpu - cpu_moved
    res["memory"]["nominalQuota"] = f"{memory_gi - memory_moved}Gi"
    lending = res[GPU].get("lendingLimit")
    if lending is not None and lending > gpus - moved:
        res[GPU]["lendingLimit"] = gpus - moved
    gpu: dict[str, Any] = {"nominalQuota": moved}
    if r.random() < 0.4:
        gpu["lendingLimit"] = r.randint(0, moved)
    return {
        "name": given["name"],
        "resources": {
            "cpu": {"nominalQuota": cpu_moved},
            "memory": {"nominalQuota": f"{memory_moved}Gi"},
            GPU: gpu,
        },
    }


def _organise(r: random.Random, teams: list[dict[str, Any]]) -> tuple[list[Any], dict[str, Any]]:
    """An organisation seed's cohort tree and manager settings (the module's docstring); the
    teams of the cohort move into its divisions."""
    cohorts: list[dict[str, Any]] = [{"name": COHORT}]
    fair = r.random() < 0.5
    members = [t for t in teams if "cohort" in t]
    for name in DIVISIONS:
        division: dict[str, Any] = {"name": name, "parent": COHORT}
        mine = [t for t in members if r.random() < 0.5] if name == DIVISIONS[0] else members
        for t in mine:
            t["cohort"] = name
        members = [t for t in members if t not in mine]
        if mine and r.random() < 0.5 and (quota := _division_quota(r, r.choice(mine))):
            division["resourceGroups"] = [
                {"coveredResources": ["cpu", "memory", GPU], "flavors": [quota]}
            ]
        if fair:
            division["fairSharing"] = {"weight": r.choice((1, 2, 3))}
        cohorts.append(division)
    if not fair:
        return cohorts, {}
    for t in teams:
        if "cohort" in t and r.random() < 0.5:
            t["fairSharing"] = {"weight": r.choice((0, 1, 2))}
        # Kueue's fair sharing preempts by shares: borrowWithinCohort is not for it.
        (t.get("preemption") or {}).pop("borrowWithinCohort", None)
    strategies = r.choice(
        (["LessThanOrEqualToFinalShare", "LessThanInitialShare"], ["LessThanInitialShare"])
    )
    return cohorts, {"fairSharing": {"preemptionStrategies": strategies}}


def generate(seed: int, release: str | None = None) -> Case:
    """The stack and the mix of one seed, for Kueue `release` (default: the pin)."""
    r = random.Random(seed)
    flavors = _flavors(r)
    shapes = {f.name: f for f in flavors}
    names = list(TEAM_NAMES[: r.randint(2, 5)])
    teams = _teams(r, names, flavors)
    classes = list(PRIORITY_NAMES[: r.randint(0, 3)])
    stack = f"cc{seed}"
    config: dict[str, Any] = {
        f"{PREFIX}:kueue": {"version": release or kueue_version()},
        f"{PREFIX}:flavors": [_flavor_config(f) for f in flavors],
        f"{PREFIX}:teams": teams,
    }
    if seed >= ORG_FROM and any("cohort" in t for t in teams):
        cohorts, manager = _organise(r, teams)
        config[f"{PREFIX}:cohorts"] = cohorts
        if manager:
            config[f"{PREFIX}:kueue"]["manager"] = manager
    elif any("cohort" in t for t in teams):
        config[f"{PREFIX}:cohort"] = {"name": COHORT}
    if classes:
        config[f"{PREFIX}:priorityClasses"] = [
            {"name": c, "value": 100 * (k + 1)} for k, c in enumerate(classes)
        ]
    horizon = r.randint(1, 6) * 3600
    count = r.randint(20, 60)
    times = sorted(r.randrange(0, horizon, 60) for _ in range(count))
    jobs = []
    for i, at in enumerate(times):
        job = _job(r, i, r.choice(teams), shapes, classes)
        job["metadata"]["annotations"]["gpu-queues.dev/submit-at"] = f"{at}s"
        if seed >= OPERATORS_FROM and job["spec"].get("parallelism", 1) > 1 and r.random() < 0.5:
            jobs.append(_operator_kind(r, job))
        elif seed >= EVERY_KIND_FROM:
            jobs.extend(_every_kind(r, job))
        elif seed >= KINDS_FROM and job["spec"].get("parallelism", 1) > 1 and r.random() < 0.5:
            jobs.append(_jobset(r, job))
        else:
            jobs.append(job)
    if any(j["kind"] == "TrainJob" for j in jobs):
        jobs.insert(0, _runtime())
    header = f"# cross-check seed {seed}: generated by sandbox/crosscheck/generate.py\n"
    return Case(
        seed=seed,
        stack=stack,
        stack_text=header + yaml.safe_dump({"config": config}, sort_keys=False),
        mix_text=header + yaml.safe_dump_all(jobs, sort_keys=False),
        jobs=count,
    )
