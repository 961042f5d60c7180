"""KueueReady: the gate between installing Kueue and creating Kueue objects.

The controller's Deployment turns Available 10-30 s before its webhooks answer, so the gate
keeps trying what Kueue's own e2e suite does, a server-side dry-run create of a
ResourceFlavor, until it succeeds or a bounded timeout ends with what the API server said.
It runs during `pulumi up` only; preview and unit tests (with an injected probe) never dial.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from gpu_queues import keys
from gpu_queues.release.upgrade import rollout_pending

Probe = Callable[[str | None, str | None, float], str]
"""probe(kubeconfig content or None for $KUBECONFIG, context or None, timeout seconds) -> report."""


Reach = Callable[[str | None, str | None], str | None]
"""reach(kubeconfig content or None for $KUBECONFIG, context or None) -> why the cluster's API
server cannot be reached, or None when it answers."""

REACH_TIMEOUT = 5.0


def api_unreachable(kubeconfig: str | None, context: str | None) -> str | None:
    """Whether the API server answers one version request (within REACH_TIMEOUT): what a
    preview, which never waits for Kueue, can still tell about the cluster it plans for."""
    from kubernetes import client

    from gpu_queues.kueue.client import KubeconfigError
    from gpu_queues.kueue.client import api_client as make_api_client

    try:
        api_client = make_api_client(kubeconfig, context)
    except KubeconfigError as exc:
        return str(exc)
    try:
        client.VersionApi(api_client).get_code(_request_timeout=REACH_TIMEOUT)
    except Exception as exc:  # refused, TLS, timeout, 401: each means no plan can be trusted
        cause = getattr(exc, "reason", None)  # urllib3's retries wrap what the socket said
        said = cause if isinstance(cause, Exception) else exc
        return f"{type(said).__name__}: {str(said).strip()[:300]}"
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    return None


def warn_if_unreachable(
    reach: Reach,
    kubeconfig: pulumi.Input[str | None] | None,
    context: pulumi.Input[str | None] | None,
    resource: pulumi.Resource,
) -> pulumi.Output[str] | None:
    """During a preview, a warning when the cluster does not answer: the preview then plans
    from the stack's state alone (every object a create, on a new stack), and `pulumi up`
    would fail at Kueue's readiness check. Logged as soon as the kubeconfig is known, before
    the objects are registered, so it is among the preview's first lines. The Output holds
    why ("" when the cluster answers); the SDK awaits it before the program ends."""

    async def check(values: list[Any]) -> str:
        why = await asyncio.to_thread(reach, values[0], values[1])
        if why is not None:
            pulumi.log.warn(
                f"the cluster's API server cannot be reached ({why}): this preview is planned "
                "without it, and `pulumi up` would fail waiting for Kueue; check the "
                "kubeconfig GpuQueues dials (kubeconfig=, else gpu-queues:kubernetes, else "
                "$KUBECONFIG)",
                resource=resource,
            )
        return why or ""

    if not pulumi.runtime.is_dry_run():
        return None
    return pulumi.Output.all(kubeconfig, context).apply(check)


def probe_for(version: str | None, image: str | None = None) -> Probe:
    """The real probe, waiting for the rollout of `version` (its controller running `image`,
    a mirror's; default the release's) first when one was installed."""
    if not version:
        return probe_webhooks
    return functools.partial(probe_webhooks, version=version, image=image)


class KueueNotReady(Exception):
    """Kueue's webhooks did not serve a dry-run create within the timeout."""


def _api_message(body: Any) -> str:
    try:
        status = json.loads(body)
    except (TypeError, ValueError):
        return str(body or "").strip()[:500]
    return str(status.get("message") or status.get("reason") or status)[:500]


def probe_webhooks(
    kubeconfig: str | None,
    context: str | None,
    timeout: float,
    interval: float = 2.0,
    version: str | None = None,
    image: str | None = None,
) -> str:
    """Dry-run create a ResourceFlavor until the API server (and Kueue's webhook) accepts it.
    The client is built in memory (gpu_queues.kueue.client): a killed run leaves no key behind.

    With `version` (the release just installed), first wait for the controller's rollout to
    finish with no older controller left (gpu_queues.release.upgrade.rollout_pending), and
    want two answers `interval` apart: during an upgrade the old controller may answer once
    more while it shuts down, and the new one must be the one serving."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from gpu_queues.kueue.client import api_client as make_api_client

    api_client = make_api_client(kubeconfig, context)
    api = client.CustomObjectsApi(api_client)
    started = time.monotonic()
    deadline = started + timeout
    attempts = 0
    last = "no answer yet"
    served = 0
    needed = 2 if version else 1
    try:
        while True:
            attempts += 1
            try:
                pending = _try_once(api_client, api, version, image)
                if pending is not None:
                    served = 0
                    last = pending
                else:
                    served += 1
                    if served >= needed:
                        waited = time.monotonic() - started
                        return f"Kueue webhooks serving after {waited:.1f}s ({attempts} tries)"
            except ApiException as exc:
                served = 0
                last = f"HTTP {exc.status} {exc.reason}: {_api_message(exc.body)}"
            except Exception as exc:  # connection refused, TLS, timeouts: keep trying
                served = 0
                last = f"{type(exc).__name__}: {exc}"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KueueNotReady(
                    f"Kueue did not serve its webhooks within {timeout:.0f}s ({attempts} "
                    f"server-side dry-run creates of a ResourceFlavor). The API server last "
                    f"said: {last}. Check `kubectl -n kueue-system get pods,events` and the "
                    "controller logs; raise gpu-queues:kueue.readinessTimeoutSeconds if it is slow"
                )
            time.sleep(min(interval, remaining))
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


def _try_once(
    api_client: Any, api: Any, version: str | None, image: str | None = None
) -> str | None:
    """One try: why Kueue is not ready yet (a rollout still pending), or None when a dry-run
    create of a ResourceFlavor passed admission. Other answers raise."""
    from kubernetes.client.exceptions import ApiException

    pending = rollout_pending(api_client, version, image) if version else None
    if pending is not None:
        return pending
    group, api_version = keys.KUEUE_API_VERSION.split("/")
    body = {
        "apiVersion": keys.KUEUE_API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"generateName": "gpu-queues-readiness-"},
    }
    try:
        api.create_cluster_custom_object(
            group, api_version, "resourceflavors", body, dry_run="All", _request_timeout=10
        )
    except ApiException as exc:
        if exc.status != 409:  # 409: admission passed; only the name clashed
            raise
    return None


@dataclass(frozen=True)
class KueueReadyArgs:
    kubeconfig: pulumi.Input[str | None] | None
    context: pulumi.Input[str | None] | None
    timeout_seconds: float
    after: Sequence[pulumi.Resource] = field(default_factory=list)
    """The install's resources: the probe starts once they are all created."""
    probe: Probe = probe_webhooks


class KueueReady(pulumi.ComponentResource):
    """Resolves `dependency` only once Kueue really serves; Kueue objects depend_on it."""

    report: pulumi.Output[str]
    dependency: pulumi.Output[list[pulumi.Resource]]

    def __init__(
        self, name: str, args: KueueReadyArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("gpu-queues:readiness:KueueReady", name, None, opts)
        after = list(args.after)
        ids = [r.id for r in after if isinstance(r, pulumi.CustomResource)]
        probe = args.probe
        timeout = args.timeout_seconds

        async def wait(values: list[Any]) -> str:
            kubeconfig, context = values[0], values[1]
            if pulumi.runtime.is_dry_run():
                return "skipped during preview"
            return await asyncio.to_thread(probe, kubeconfig, context, timeout)

        self.report = pulumi.Output.all(args.kubeconfig, args.context, *ids).apply(wait)
        self.dependency = self.report.apply(lambda _: [*after, self])
        self.register_outputs({"report": self.report})
