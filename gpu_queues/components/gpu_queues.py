"""GpuQueues: the whole stack, wired in dependency order, under one explicit provider.

`validate` (gpu_queues/components/validation.py) is the program's validation phase: the stack
config, the Kueue manifest and how they fit together are all checked there, before the first
resource (the provider included) is registered. GpuQueues only builds what `validate`
returned; GpuQueuesArgs' constructors (from_config, from_stack_file, from_pulumi_config) run it.

The provider is the caller's when the caller's options carry a Kubernetes provider
(`provider=`, `providers=`, or one inherited from a parent; then `kubeconfig=` must say what it
dials); otherwise GpuQueues builds one from `kubeconfig=`, else `gpu-queues:kubernetes`
(gpu_queues.components.provider).
"""

# No `from __future__ import annotations`: the component provider's analyzer reads the output
# attributes' annotations as types (gpu_queues/components/hosted.py).
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from gpu_queues import keys
from gpu_queues.components import provisioning as capacity
from gpu_queues.components.cohort import (
    CohortTree,
    CohortTreeArgs,
    SharedCohort,
    SharedCohortArgs,
)
from gpu_queues.components.flavors import Flavors, FlavorsArgs
from gpu_queues.components.kueue import KueueRelease, KueueReleaseArgs
from gpu_queues.components.monitoring import KueueMonitoring, KueueMonitoringArgs
from gpu_queues.components.multikueue import (
    ManagerArgs,
    MultiKueueManager,
    MultiKueueWorkerAccess,
    WorkerAccessArgs,
)
from gpu_queues.components.priorities import PriorityClasses, PriorityClassesArgs
from gpu_queues.components.provider import build_provider, callers_provider, connection
from gpu_queues.components.queues import TeamQueues, TeamQueuesArgs
from gpu_queues.components.readiness import (
    KueueReady,
    KueueReadyArgs,
    Probe,
    Reach,
    api_unreachable,
    probe_for,
    probe_webhooks,
    warn_if_unreachable,
)
from gpu_queues.components.storage import SharedStorage, SharedStorageArgs
from gpu_queues.components.validation import stack_config_keys, validate
from gpu_queues.config import render
from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import (
    ConfigError,
    MultiKueueWorkerRole,
    Problem,
    StackConfig,
    raw_from_pulumi_config,
)
from gpu_queues.config.multikueue_checks import DEFAULT_FRAMEWORKS
from gpu_queues.config.stack_keys import StackConfigKeys
from gpu_queues.kueue.client import KubeconfigError, resolve
from gpu_queues.release import metrics
from gpu_queues.release.manifest import PreparedManifest

TYPE = "gpu-queues:index:GpuQueues"
LEGACY_TYPE = "gpu-queues:stack:GpuQueues"


@dataclass(frozen=True)
class GpuQueuesArgs:
    """What GpuQueues builds. Made by from_config (a StackConfig or a mapping of stack config
    keys, in code), from_stack_file (a Pulumi.<stack>.yaml) or from_pulumi_config (the running
    stack's `gpu-queues:*` keys): each runs every check (`validate`) and raises ConfigError,
    KubeconfigError or ManifestError before anything is registered. The plain constructor
    takes a config and release already validated."""

    config: StackConfig
    manifest: PreparedManifest | None
    """The checked, prepared release (gpu_queues.release.manifest.load_release); None when not
    installing."""
    probe: Probe = probe_webhooks
    kubeconfig: pulumi.Input[str] | None = None
    """kubeconfig content of the cluster (held as a secret): what the readiness check dials,
    and what the provider GpuQueues builds (when the caller gives none) connects with. Unset:
    `gpu-queues:kubernetes` of the running stack, then the config's `kubernetes`, then
    $KUBECONFIG. With a provider of the caller's, give the kubeconfig it was built from."""
    context: pulumi.Input[str] | None = None
    """The kubeconfig context (unset: its current context)."""
    reach: Reach | None = None
    """How a preview tells whether the cluster answers (a warning when not). None: the real
    check (readiness.api_unreachable) with the real probe, none beside a test's probe."""

    @classmethod
    def from_config(
        cls,
        config: StackConfig | StackConfigKeys,
        *,
        kubeconfig: pulumi.Input[str] | None = None,
        context: pulumi.Input[str] | None = None,
        root: Path | None = None,
        stack: str | None = None,
    ) -> "GpuQueuesArgs":
        """Stack config built in code: the keys a stack file holds under `gpu-queues:`
        (camelCase, as in Pulumi.<stack>.yaml; typed as gpu_queues.StackConfigKeys, so a type
        checker names a misspelt key), or a StackConfig. Checked as a stack file is:
        ConfigError names every key that is wrong. A relative `kueue.manifest.path` is read
        from `root` (default: the working directory, where Pulumi runs the program)."""
        # Any mapping at runtime (the checks name what is wrong in one that is not typed).
        raw: Mapping[str, Any] = (
            stack_config_keys(config) if isinstance(config, StackConfig) else config
        )
        checked, manifest = validate(
            raw,
            root or Path.cwd(),
            stack=stack,
            kubeconfig=kubeconfig if isinstance(kubeconfig, str) else None,
            context=context if isinstance(context, str) else None,
        )
        return cls(checked, manifest, kubeconfig=kubeconfig, context=context)

    @classmethod
    def from_stack_file(
        cls,
        path: Path,
        *,
        kubeconfig: pulumi.Input[str] | None = None,
        context: pulumi.Input[str] | None = None,
        root: Path | None = None,
    ) -> "GpuQueuesArgs":
        """The `gpu-queues:*` keys of a stack file (Pulumi.<stack>.yaml), read as the Pulumi
        CLI reads it (gpu_queues.config.stackfile; StackFileError if it cannot be). A
        `kubernetes.kubeconfig` secret in it is encrypted with that stack's key and never
        decrypted here: give `kubeconfig=` instead. `root` defaults to the file's folder."""
        # Here, not at the top: the program's own import stays without the YAML round-tripper.
        from gpu_queues.config.secure import PLACEHOLDER
        from gpu_queues.config.stackfile import parse_config

        path = Path(path)
        raw = dict(parse_config(path.read_text(encoding="utf-8"), path.name))
        connection = raw.get(keys.KEY_KUBERNETES)
        if isinstance(connection, Mapping) and connection.get("kubeconfig") == PLACEHOLDER:
            if kubeconfig is None:
                raise ConfigError(
                    [
                        Problem(
                            (keys.KEY_KUBERNETES, "kubeconfig"),
                            f"is a secret of {path.name}'s own stack, which is not decrypted "
                            "here: pass kubeconfig= (the one your provider uses) instead",
                        )
                    ]
                )
            raw[keys.KEY_KUBERNETES] = {k: v for k, v in connection.items() if k != "kubeconfig"}
        stack = (
            path.name[len("Pulumi.") : -len(".yaml")] if path.name.startswith("Pulumi.") else None
        )
        checked, manifest = validate(
            raw,
            root or path.parent,
            stack=stack,
            project_dir=path.parent,
            kubeconfig=kubeconfig if isinstance(kubeconfig, str) else None,
            context=context if isinstance(context, str) else None,
        )
        return cls(checked, manifest, kubeconfig=kubeconfig, context=context)

    def provider(
        self, name: str, opts: pulumi.ResourceOptions | None = None
    ) -> pulumi.ProviderResource:
        """A Kubernetes provider on this cluster, from the kubeconfig and context given to the
        constructor: for GpuQueues' options and the program's own resources, so that the
        kubeconfig is given once and Kueue's readiness check dials the cluster every object
        goes to. Built with the settings GpuQueues needs (server-side apply, the manager's
        ConfigMap updated in place: gpu_queues.components.provider)."""
        if self.kubeconfig is None:
            raise KubeconfigError(
                "GpuQueuesArgs.provider needs the kubeconfig: pass kubeconfig= to "
                "GpuQueuesArgs.from_config (or from_stack_file)"
            )
        return build_provider(name, self.kubeconfig, self.context, opts)

    @classmethod
    def from_pulumi_config(cls, *, root: Path | None = None) -> "GpuQueuesArgs":
        """The running stack's `gpu-queues:*` config (what this project's own program does;
        the connection then comes from `gpu-queues:kubernetes`, held as a secret)."""
        checked, manifest = validate(
            raw_from_pulumi_config(), root or Path.cwd(), stack=pulumi.get_stack()
        )
        return cls(checked, manifest)


class GpuQueues(pulumi.ComponentResource):
    """Kueue, flavors, cohort, team queues and shared storage for one cluster.

    Its outputs are typed attributes (`queues.local_queues`); `outputs` holds them all by
    their stack output names (gpu_queues.keys.OUT_*), the optional ones (metrics, MultiKueue,
    provisioning) included, for a program that exports them all."""

    kueue_version: pulumi.Output[str]
    """The Kueue release installed (or waited for)."""
    kueue_installed: pulumi.Output[bool]
    flavors: pulumi.Output[list[str]]
    """The ResourceFlavors' names."""
    cohort: pulumi.Output[str | None]
    """The shared Cohort's name (None without one)."""
    cluster_queues: pulumi.Output[dict[str, str]]
    """Team name -> its ClusterQueue's name."""
    local_queues: pulumi.Output[dict[str, str]]
    """Team name -> `namespace/LocalQueue`, what a job's kueue.x-k8s.io/queue-name names."""
    namespaces: pulumi.Output[dict[str, str]]
    """Team name -> its namespace."""
    shared_claims: pulumi.Output[list[str]]
    """The shared PersistentVolumeClaims as `namespace/name`."""
    priority_classes: pulumi.Output[dict[str, int]]
    """WorkloadPriorityClass name -> its value."""

    def __init__(
        self, name: str, args: GpuQueuesArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        cfg = args.config
        if cfg.kueue.install and (
            args.manifest is None or args.manifest.version != cfg.kueue.version
        ):
            # Checked before super().__init__ registers this component: nothing half-built.
            raise ValueError(
                "kueue.install is true but no prepared manifest of its version was given"
            )
        if args.kubeconfig is None and callers_provider(opts) is not None:
            # Kueue's readiness check dials with a client of its own: without the kubeconfig
            # of the caller's provider it would dial another cluster's ($KUBECONFIG's).
            raise KubeconfigError(
                f"GpuQueues {name!r} got a Kubernetes provider in its options but no kubeconfig: "
                "pass kubeconfig= to GpuQueuesArgs.from_config (or from_stack_file), the one "
                "that provider was built from (Kueue's readiness check dials it), or leave the "
                "provider out and GpuQueues builds one from that kubeconfig"
            )
        # gpu-queues:index:GpuQueues is the token other languages construct it by (a
        # component provider's types are all in module `index`); the alias is the type it had,
        # so that a stack made before keeps it and everything under it (the engine aliases the
        # children from it), with no replacement.
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(aliases=[pulumi.Alias(type_=LEGACY_TYPE)])
        )
        super().__init__(TYPE, name, None, opts)
        kubeconfig, context = (
            connection(cfg.kubernetes)
            if args.kubeconfig is None and args.context is None
            else (pulumi.Output.secret(args.kubeconfig), pulumi.Output.from_input(args.context))
        )
        reach = args.reach or (api_unreachable if args.probe is probe_webhooks else None)
        if reach is not None:
            warn_if_unreachable(reach, kubeconfig, context, self)
        # The caller's provider (opts or a parent's), else one of our own.
        provider = self.get_provider("kubernetes::Provider") or build_provider(
            f"{name}-k8s", kubeconfig, context, pulumi.ResourceOptions(parent=self)
        )
        under = pulumi.ResourceOptions(parent=self, providers={"kubernetes": provider})
        ready = _kueue(name, args, kubeconfig, context, under)
        uses, cohort_name = _shared(name, cfg, ready, under)
        mk = cfg.multi_kueue
        mk_checks: dict[str, pulumi.Resource] = {}
        if mk is not None and mk.manager is not None:
            mk_checks = MultiKueueManager(
                f"{name}-multikueue", ManagerArgs(mk.manager, ready.dependency), under
            ).checks
        checks = {team: [check] for team, check in mk_checks.items()}
        if cfg.provisioning is not None:
            on_demand = capacity.CapacityOnDemand(
                f"{name}-provisioning",
                capacity.CapacityOnDemandArgs(cfg.provisioning, ready.dependency),
                under,
            )
            for team in cfg.provisioning.teams:
                checks.setdefault(team.name, []).extend(
                    on_demand.checks[u.name] for u in team.checks if u.name in on_demand.checks
                )
        teams = _teams(name, cfg, ready, uses, checks, under)
        namespaces = {ns: res for q in teams for ns, res in q.namespaces.items()}
        storage = SharedStorage(
            f"{name}-storage", SharedStorageArgs(cfg.shared_storage, namespaces), under
        )
        if cfg.kueue.metrics.enabled:
            board = dashboard(cfg) if cfg.kueue.metrics.dashboard.enabled else None
            KueueMonitoring(
                f"{name}-monitoring", KueueMonitoringArgs(cfg, board, ready.dependency), under
            )

        self.kueue_version = pulumi.Output.from_input(cfg.kueue.version)
        self.kueue_installed = pulumi.Output.from_input(cfg.kueue.install)
        self.flavors = pulumi.Output.from_input([f.name for f in cfg.flavors])
        self.cohort = pulumi.Output.from_input(cohort_name)
        self.cluster_queues = pulumi.Output.from_input({t.name: t.cluster_queue for t in cfg.teams})
        self.local_queues = pulumi.Output.from_input(
            {t.name: f"{t.namespace}/{t.local_queue}" for t in cfg.teams}
        )
        self.namespaces = pulumi.Output.from_input({t.name: t.namespace for t in cfg.teams})
        self.shared_claims = storage.claim_refs
        self.priority_classes = pulumi.Output.from_input(
            {p.name: p.value for p in cfg.priority_classes}
        )
        # Annotated here, not on the class: it is no output of the multi-language component.
        self.outputs: dict[str, pulumi.Input[Any]] = {
            keys.OUT_KUEUE_VERSION: self.kueue_version,
            keys.OUT_KUEUE_INSTALLED: self.kueue_installed,
            keys.OUT_FLAVORS: self.flavors,
            keys.OUT_COHORT: self.cohort,
            keys.OUT_CLUSTER_QUEUES: self.cluster_queues,
            keys.OUT_LOCAL_QUEUES: self.local_queues,
            keys.OUT_NAMESPACES: self.namespaces,
            keys.OUT_SHARED_CLAIMS: self.shared_claims,
            keys.OUT_PRIORITY_CLASSES: self.priority_classes,
        }
        # Only a stack with a cohort tree, or a team of several LocalQueues, has these outputs.
        if cfg.cohorts:
            self.outputs[keys.OUT_COHORTS] = {c.name: c.parent for c in cfg.cohorts}
        if any(t.local_queues for t in cfg.teams):
            self.outputs[keys.OUT_TEAM_LOCAL_QUEUES] = {
                t.name: [
                    f"{q['metadata']['namespace']}/{q['metadata']['name']}"
                    for q in render.local_queues(t)
                ]
                for t in cfg.teams
            }
        # Only a stack with kueue.metrics on has this output: others stay as they were.
        if cfg.kueue.metrics.enabled:
            self.outputs[keys.OUT_METRICS] = _metrics_output(cfg)
        # Only a MultiKueue stack has these outputs: other stacks' outputs stay as they were.
        if mk is not None and mk.manager is not None:
            self.outputs[keys.OUT_MULTI_KUEUE] = {
                "role": "manager",
                "workers": [w.name for w in mk.manager.workers],
                "admissionChecks": {t: render.multikueue_check_name(t) for t in mk_checks},
            }
        if cfg.provisioning is not None:
            self.outputs[keys.OUT_PROVISIONING] = capacity.outputs(cfg.provisioning)
        if mk is not None and mk.worker is not None:
            access = _worker_access(name, cfg, mk.worker, ready, kubeconfig, context, under)
            self.outputs[keys.OUT_MULTI_KUEUE] = {"role": "worker"}
            self.outputs[keys.OUT_MULTI_KUEUE_KUBECONFIG] = access.kubeconfig
        self.register_outputs(self.outputs)


def _metrics_output(cfg: StackConfig) -> dict[str, str]:
    """Where the ServiceMonitor and the dashboard are (namespace/name), and the dashboard's uid."""
    m, out = cfg.kueue.metrics, {}
    if m.service_monitor.enabled:
        ns = metrics.service_monitor_namespace(cfg.kueue)
        out["serviceMonitor"] = f"{ns}/{metrics.SERVICE_MONITOR}"
    if m.dashboard.enabled:
        out["dashboard"] = f"{metrics.dashboard_namespace(cfg.kueue)}/{metrics.DASHBOARD_CONFIGMAP}"
        out["dashboardUid"] = m.dashboard.uid
    return out


def _kueue(
    name: str,
    args: GpuQueuesArgs,
    kubeconfig: pulumi.Output[Any],
    context: pulumi.Output[Any],
    under: pulumi.ResourceOptions,
) -> KueueReady:
    """The Kueue release (when the stack installs it), and the wait until Kueue answers."""
    installed: list[pulumi.Resource] = []
    if args.config.kueue.install and args.manifest is not None:
        release = KueueRelease(
            f"{name}-kueue",
            KueueReleaseArgs(version=args.manifest.version, objects=args.manifest.objects),
            under,
        )
        installed = list(release.resources)
    return KueueReady(
        f"{name}-kueue-ready",
        KueueReadyArgs(
            kubeconfig=kubeconfig,
            context=context,
            timeout_seconds=float(args.config.kueue.readiness_timeout_seconds),
            after=installed,
            # The real probe also waits for the new controller's rollout (upgrades).
            probe=probe_for(
                args.manifest.version if args.manifest else None,
                args.manifest.image if args.manifest else None,
            )
            if args.probe is probe_webhooks
            else args.probe,
        ),
        under,
    )


def _shared(
    name: str, cfg: StackConfig, ready: KueueReady, under: pulumi.ResourceOptions
) -> tuple[list[pulumi.Resource], str | None]:
    """What every team's queues use: the flavors and the cohort (and its name); the
    priority classes beside them."""
    flavors = Flavors(
        f"{name}-flavors", FlavorsArgs(cfg.flavors, ready.dependency, cfg.topologies), under
    )
    uses: list[pulumi.Resource] = list(flavors.by_name.values())
    cohort_name: str | None = None
    if cfg.cohort is not None:
        cohort = SharedCohort(
            f"{name}-cohort", SharedCohortArgs(cfg.cohort, ready.dependency), under
        )
        uses.append(cohort.cohort)
        cohort_name = cfg.cohort.name
    if cfg.cohorts:
        tree = CohortTree(f"{name}-cohorts", CohortTreeArgs(cfg.cohorts, ready.dependency), under)
        uses.extend(tree.by_name.values())
    if cfg.priority_classes:
        PriorityClasses(
            f"{name}-priorities",
            PriorityClassesArgs(cfg.priority_classes, ready.dependency),
            under,
        )
    return uses, cohort_name


def _teams(
    name: str,
    cfg: StackConfig,
    ready: KueueReady,
    uses: list[pulumi.Resource],
    checks: dict[str, list[pulumi.Resource]],
    under: pulumi.ResourceOptions,
) -> list[TeamQueues]:
    """Each team's namespace and queues, after what they use (and its admission checks)."""
    # The config in its stack-file form, dumped once: admission_checks_of reads the whole
    # config, and dumping it per team made the program quadratic in the teams.
    form = render.config_form(cfg)
    return [
        TeamQueues(
            f"{name}-{team.name}",
            TeamQueuesArgs(
                team,
                ready.dependency,
                [*uses, *checks.get(team.name, [])],
                render.admission_checks_of(form, team.name),
            ),
            under,
        )
        for team in cfg.teams
    ]


def _worker_access(
    name: str,
    cfg: StackConfig,
    role: MultiKueueWorkerRole,
    ready: KueueReady,
    kubeconfig: pulumi.Output[Any],
    context: pulumi.Output[Any],
    under: pulumi.ResourceOptions,
) -> MultiKueueWorkerAccess:
    """A MultiKueue worker's access for its manager (the kubeconfig the manager reads)."""
    server: pulumi.Input[str] = role.server or pulumi.Output.all(kubeconfig, context).apply(
        lambda v: resolve(v[0], v[1], run_exec=False).server
    )
    integrations = cfg.kueue.manager.integrations
    return MultiKueueWorkerAccess(
        f"{name}-multikueue-worker",
        WorkerAccessArgs(
            role=role,
            server=server,
            frameworks=(integrations.frameworks if integrations else None)
            or list(DEFAULT_FRAMEWORKS),
            cluster_name=pulumi.get_stack(),
            ready=ready.dependency,
        ),
        under,
    )
