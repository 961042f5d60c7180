"""The program's validation phase: everything that can be checked without registering a
resource (the stack config, the Kueue manifest, how they fit together, and the few read-only
questions to the cluster a preview must ask), before GpuQueues builds anything. GpuQueuesArgs'
constructors (gpu_queues/components/gpu_queues.py) run `validate`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_queues import keys
from gpu_queues.components import provisioning as capacity
from gpu_queues.components.monitoring import cluster_problems
from gpu_queues.components.multikueue import effective_kueue
from gpu_queues.config import multikueue_checks, worker_stacks
from gpu_queues.config.model import ConfigError, Problem, StackConfig, load_config
from gpu_queues.config.subjects import reserved_namespace_problems
from gpu_queues.kueue.client import KubeconfigError, resolve
from gpu_queues.kueue.client import validate as validate_kubeconfig
from gpu_queues.kueue.fields import api_server_url_problem
from gpu_queues.release import metrics
from gpu_queues.release.manifest import PROJECT_ROOT, PreparedManifest, load_release
from gpu_queues.release.reference import Releases


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
