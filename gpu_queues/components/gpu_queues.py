"""GpuQueues: the whole stack, wired in dependency order, under one explicit provider.

`validate` is the program's validation phase: the stack config, the Kueue manifest and how
they fit together are all checked there, before the first resource (the provider included)
is registered. GpuQueues only builds what `validate` returned; GpuQueuesArgs' constructors
(from_config, from_stack_file, from_pulumi_config) run it.

The provider is the caller's when the caller's options carry a Kubernetes provider
(`provider=`, `providers=`, or one inherited from a parent); otherwise GpuQueues builds one
from `gpu-queues:kubernetes` (gpu_queues.components.provider).
"""

from __future__ import annotations

import json
import os
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
from gpu_queues.components.monitoring import KueueMonitoring, KueueMonitoringArgs, cluster_problems
from gpu_queues.components.multikueue import (
    ManagerArgs,
    MultiKueueManager,
    MultiKueueWorkerAccess,
    WorkerAccessArgs,
    effective_kueue,
)
from gpu_queues.components.priorities import PriorityClasses, PriorityClassesArgs
from gpu_queues.components.provider import build_provider, connection
from gpu_queues.components.queues import TeamQueues, TeamQueuesArgs
from gpu_queues.components.readiness import (
    KueueReady,
    KueueReadyArgs,
    Probe,
    probe_for,
    probe_webhooks,
)
from gpu_queues.components.storage import SharedStorage, SharedStorageArgs
from gpu_queues.config import multikueue_checks, render, worker_stacks
from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import (
    ConfigError,
    MultiKueueWorkerRole,
    Problem,
    StackConfig,
    load_config,
    raw_from_pulumi_config,
)
from gpu_queues.config.multikueue_checks import DEFAULT_FRAMEWORKS
from gpu_queues.config.subjects import reserved_namespace_problems
from gpu_queues.kueue.client import KubeconfigError, resolve
from gpu_queues.kueue.client import validate as validate_kubeconfig
from gpu_queues.kueue.fields import api_server_url_problem
from gpu_queues.release import metrics
from gpu_queues.release.manifest import PROJECT_ROOT, PreparedManifest, load_release
from gpu_queues.release.reference import Releases


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

    @classmethod
    def from_config(
        cls,
        config: StackConfig | Mapping[str, Any],
        *,
        kubeconfig: pulumi.Input[str] | None = None,
        context: pulumi.Input[str] | None = None,
        root: Path | None = None,
        stack: str | None = None,
    ) -> GpuQueuesArgs:
        """Stack config built in code: the keys a stack file holds under `gpu-queues:`
        (camelCase, as in Pulumi.<stack>.yaml), or a StackConfig. Checked as a stack file is:
        ConfigError names every key that is wrong. A relative `kueue.manifest.path` is read
        from `root` (default: the working directory, where Pulumi runs the program)."""
        raw = stack_config_keys(config) if isinstance(config, StackConfig) else config
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
    ) -> GpuQueuesArgs:
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

    @classmethod
    def from_pulumi_config(cls, *, root: Path | None = None) -> GpuQueuesArgs:
        """The running stack's `gpu-queues:*` config (what this project's own program does;
        the connection then comes from `gpu-queues:kubernetes`, held as a secret)."""
        checked, manifest = validate(
            raw_from_pulumi_config(), root or Path.cwd(), stack=pulumi.get_stack()
        )
        return cls(checked, manifest)


def stack_config_keys(config: StackConfig) -> dict[str, Any]:
    """A StackConfig as the stack config keys it was made from (only what was set), for
    `validate`: the checks across keys read those, not the models."""
    raw: dict[str, Any] = config.model_dump(by_alias=True, exclude_unset=True)
    secret = config.kubernetes.kubeconfig
    if secret is not None:
        raw[keys.KEY_KUBERNETES]["kubeconfig"] = secret.get_secret_value()
    return raw


def manifest_problems(config: StackConfig, manifest: PreparedManifest | None) -> list[Problem]:
    """Stack config that clashes with the manifest: a team namespace (or a submitter service
    account's namespace) the manifest creates. One rule with load_config's reserved
    namespaces: config_checks.reserved_namespace_problems, given the manifest's namespaces."""
    if manifest is None:
        return []
    return reserved_namespace_problems(config, extra=manifest.namespaces)


def _runtime_secret_keys() -> list[str] | None:
    """The config keys the engine holds as secrets, when the language host says (it sets
    PULUMI_CONFIG_SECRET_KEYS for the program); None outside a Pulumi run."""
    text = os.environ.get("PULUMI_CONFIG_SECRET_KEYS")
    if text is None:
        return None
    try:
        found = json.loads(text)
    except ValueError:
        return None
    return [str(k) for k in found] if isinstance(found, list) else None


def _worker_server(config: StackConfig) -> str | None:
    """The API server a worker stack's managers dial (None when it cannot be told here)."""
    role = config.multi_kueue.worker if config.multi_kueue else None
    if role is None:
        return None
    if role.server is not None:
        return role.server
    kubeconfig = config.kubernetes.kubeconfig
    try:
        conn = resolve(
            kubeconfig.get_secret_value() if kubeconfig else None,
            config.kubernetes.context,
            run_exec=False,
        )
    except KubeconfigError:
        return None  # no kubeconfig where this runs (a CI preview): checked where it applies
    return conn.server


def multikueue_problems(
    raw: Mapping[str, Any],
    config: StackConfig,
    project_dir: Path,
    stack: str | None,
    secret_keys: list[str] | None,
) -> list[Problem]:
    """The MultiKueue checks that read beyond the config: inside the secret kubeconfigs, the
    stack's own file (a plain-text worker kubeconfig), the engine's secret keys, the worker
    stacks' files in the project, and the address a worker stack gives its managers."""
    mk = config.multi_kueue
    problems: list[Problem] = []
    if mk is not None and mk.manager is not None:
        problems += multikueue_checks.inline_kubeconfig_problems(raw)
        problems += worker_stacks.worker_stack_problems(raw, project_dir, stack)
        own = project_dir / f"Pulumi.{stack}.yaml" if stack else None
        if own is not None and own.is_file():
            problems += multikueue_checks.stack_file_problems(own.read_text(), own.name)
        if secret_keys is not None:
            problems += multikueue_checks.plaintext_at_runtime(raw, secret_keys)
    if mk is not None and mk.worker is not None and mk.worker.server is None:
        server = _worker_server(config)
        reason = api_server_url_problem(server) if server else None
        if reason:
            problems.append(
                Problem(
                    (keys.KEY_MULTI_KUEUE, "worker", "server"),
                    f"is unset, and the server of this stack's kubeconfig ({server}) cannot be "
                    f"dialled by Kueue's MultiKueue: {reason}; set the address managers reach "
                    "this cluster at",
                )
            )
    return problems


def validate(
    raw: Mapping[str, Any],
    root: Path = PROJECT_ROOT,
    *,
    stack: str | None = None,
    project_dir: Path | None = None,
    releases: Releases | None = None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> tuple[StackConfig, PreparedManifest | None]:
    """Everything the program can check without a cluster; ConfigError, KubeconfigError or
    ManifestError.

    `stack` is the running stack (its Pulumi.<stack>.yaml, in `project_dir`, is checked for
    plain-text secrets); `project_dir` (default: the working directory, where Pulumi runs the
    program) holds the stack files a MultiKueue manager's worker stacks are checked against.
    The config returned carries what MultiKueue needs in Kueue's Configuration
    (multikueue.effective_kueue). `releases` is where the Kueue release the manifest is
    compared with comes from (default: the committed digests and `make kueue-manifest`'s
    render under `root`; gpu_queues/release/reference.py).

    With kueue.metrics on, it also asks the cluster (through `kubeconfig` and `context`, else
    the config's `kubernetes`, else $KUBECONFIG) for the ServiceMonitor CRD and the namespaces
    the objects go in (gpu_queues.components.monitoring.cluster_problems): the one check here
    that dials, so that a preview fails where an apply would."""
    config = load_config(raw)
    if config.kubernetes.kubeconfig is not None:  # unset: $KUBECONFIG, possibly absent in CI
        validate_kubeconfig(
            config.kubernetes.kubeconfig.get_secret_value(), config.kubernetes.context
        )
    problems = multikueue_problems(
        raw, config, project_dir or Path.cwd(), stack, _runtime_secret_keys()
    )
    if problems:
        raise ConfigError(problems)
    config = config.model_copy(update={"kueue": effective_kueue(config, stack)})
    manifest = load_release(config.kueue, root, releases) if config.kueue.install else None
    problems = manifest_problems(config, manifest)
    if problems:
        raise ConfigError(problems)
    problems = monitoring_problems(config, manifest, kubeconfig, context)
    if problems:
        raise ConfigError(problems)
    problems = provisioning_problems(config, kubeconfig, context)
    if problems:
        raise ConfigError(problems)
    return config, manifest


def provisioning_problems(
    config: StackConfig, kubeconfig: str | None = None, context: str | None = None
) -> list[Problem]:
    """With provisioning checks, the cluster must serve the ProvisioningRequest API
    (gpu_queues.components.provisioning.cluster_problems); none asked otherwise."""
    if config.provisioning is None:
        return []
    secret = config.kubernetes.kubeconfig
    return capacity.cluster_problems(
        config.provisioning,
        kubeconfig if kubeconfig is not None else (secret.get_secret_value() if secret else None),
        context if context is not None else config.kubernetes.context,
    )


def monitoring_problems(
    config: StackConfig,
    manifest: PreparedManifest | None,
    kubeconfig: str | None = None,
    context: str | None = None,
) -> list[Problem]:
    """kueue.metrics against the release (its metrics Service and reader role) and against
    the cluster (the ServiceMonitor CRD, the namespaces); none when it is off."""
    settings = config.kueue.metrics
    if not settings.enabled:
        return []
    if settings.service_monitor.enabled and manifest is not None:
        problems = metrics.release_problems(manifest.objects)
        if problems:
            return problems
    secret = config.kubernetes.kubeconfig
    created = {ns for t in config.teams for ns in t.all_namespaces} | (
        manifest.namespaces if manifest else set()
    )
    return cluster_problems(
        config,
        kubeconfig if kubeconfig is not None else (secret.get_secret_value() if secret else None),
        context if context is not None else config.kubernetes.context,
        created,
    )


class GpuQueues(pulumi.ComponentResource):
    """Kueue, flavors, cohort, team queues and shared storage for one cluster."""

    outputs: dict[str, pulumi.Input[Any]]

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
        super().__init__("gpu-queues:stack:GpuQueues", name, None, opts)
        kubeconfig, context = (
            connection(cfg.kubernetes)
            if args.kubeconfig is None and args.context is None
            else (pulumi.Output.secret(args.kubeconfig), pulumi.Output.from_input(args.context))
        )
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

        self.outputs = {
            keys.OUT_KUEUE_VERSION: cfg.kueue.version,
            keys.OUT_KUEUE_INSTALLED: cfg.kueue.install,
            keys.OUT_FLAVORS: [f.name for f in cfg.flavors],
            keys.OUT_COHORT: cohort_name,
            keys.OUT_CLUSTER_QUEUES: {t.name: t.cluster_queue for t in cfg.teams},
            keys.OUT_LOCAL_QUEUES: {t.name: f"{t.namespace}/{t.local_queue}" for t in cfg.teams},
            keys.OUT_NAMESPACES: {t.name: t.namespace for t in cfg.teams},
            keys.OUT_SHARED_CLAIMS: storage.claim_refs,
            keys.OUT_PRIORITY_CLASSES: {p.name: p.value for p in cfg.priority_classes},
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
