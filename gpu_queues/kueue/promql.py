"""Kueue's Prometheus metrics as the stack's Grafana dashboard reads them: the metric and label
names, and every PromQL expression the dashboard shows, written once here.

The names are those Kueue v0.18 exports (pkg/metrics/metrics.go: subsystem `kueue`). The
ClusterQueue resource gauges (usage, nominal quota, lending limit) are exported only when the
manager Configuration sets `metrics.enableClusterQueueResources` (the program sets it when the
dashboard is on). The cohort subtree gauges are always exported; the LocalQueue ones while
`metrics.localQueueMetrics.enable` (default true) and the LocalQueueMetrics feature gate (beta,
on by default since v0.17) are left on. A sandbox test reads the names off a running Kueue's
metrics endpoint and checks every name these expressions use against them
(tests/e2e/test_metrics.py), so a release that renames one fails a test instead of leaving a
panel empty.

Every expression selects one ClusterQueue (and one flavor and resource where it counts
resources); the label values are quoted with `quote`, so any team, flavor or resource name the
config allows is a literal, never PromQL.
"""

from __future__ import annotations

from typing import Final

# Gauges, per cohort, cluster_queue, flavor, resource (with enableClusterQueueResources).
USAGE: Final = "kueue_cluster_queue_resource_usage"
NOMINAL_QUOTA: Final = "kueue_cluster_queue_nominal_quota"
LENDING_LIMIT: Final = "kueue_cluster_queue_lending_limit"  # +Inf when the queue sets none
# Gauge, per cluster_queue and status (active: in the queue; inadmissible: waiting for change).
PENDING: Final = "kueue_pending_workloads"
# Histogram, per cluster_queue: creation (or requeue) to admission.
ADMISSION_WAIT: Final = "kueue_admission_wait_time_seconds"
# Counter, per cluster_queue and reason (Preempted, PodsReadyTimeout, Deactivated, ...).
EVICTED: Final = "kueue_evicted_workloads_total"
# Gauges, per cohort, flavor, resource: the nominal quota of the cohort's whole subtree (its
# own, its child cohorts' and its ClusterQueues'), and what the subtree's workloads reserve of
# it. Kueue exports no subtree usage: reserved is admitted once admission checks pass.
COHORT_QUOTA: Final = "kueue_cohort_subtree_quota"
COHORT_RESERVED: Final = "kueue_cohort_subtree_resource_reservations"
# Gauges, per LocalQueue (labels name, namespace): usage per flavor and resource, and pending
# workloads per status.
LOCAL_QUEUE_USAGE: Final = "kueue_local_queue_resource_usage"
LOCAL_QUEUE_PENDING: Final = "kueue_local_queue_pending_workloads"

# What a percentile panel shows, and the window of rates and increases (Grafana's own
# variable: at least four scrape intervals of the data source).
QUANTILES: Final = (0.5, 0.9, 0.99)
RATE_WINDOW: Final = "$__rate_interval"
EVICTION_WINDOW: Final = "1h"


def quote(value: str) -> str:
    """`value` as a PromQL double-quoted string literal."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def select(metric: str, **labels: str) -> str:
    """`metric{label="value", ...}`: equality matchers, in the order given. A label name ending
    in `_not` matches everything but the value (`cluster_queue_not="a"`: cluster_queue!="a")."""
    matchers = []
    for name, value in labels.items():
        op = "!=" if name.endswith("_not") else "="
        matchers.append(f"{name.removesuffix('_not')}{op}{quote(value)}")
    return f"{metric}{{{', '.join(matchers)}}}"


def _resource(metric: str, queue: str, flavor: str, resource: str) -> str:
    return f"sum({select(metric, cluster_queue=queue, flavor=flavor, resource=resource)})"


def in_use(queue: str, flavor: str, resource: str) -> str:
    """How much of `resource` of `flavor` the queue's admitted workloads hold."""
    return _resource(USAGE, queue, flavor, resource)


def nominal_quota(queue: str, flavor: str, resource: str) -> str:
    """The queue's nominal quota of `resource` in `flavor`."""
    return _resource(NOMINAL_QUOTA, queue, flavor, resource)


def borrowed(queue: str, flavor: str, resource: str) -> str:
    """What the queue uses beyond its nominal quota: borrowed from its cohort."""
    used, nominal = in_use(queue, flavor, resource), nominal_quota(queue, flavor, resource)
    return f"clamp_min({used} - {nominal}, 0)"


def _smaller(a: str, b: str) -> str:
    """The smaller of two one-element vectors (b when a is missing)."""
    return f"(({a}) <= ({b})) or ({b})"


def lendable(queue: str, flavor: str, resource: str) -> str:
    """The queue's unused nominal quota, within its lending limit: what the cohort may borrow."""
    used, nominal = in_use(queue, flavor, resource), nominal_quota(queue, flavor, resource)
    unused = f"clamp_min({nominal} - {used}, 0)"
    return _smaller(unused, _resource(LENDING_LIMIT, queue, flavor, resource))


def borrowed_by_others(queue: str, cohort: str, flavor: str, resource: str) -> str:
    """What the other queues of the cohort use beyond their nominal quotas."""
    others = {"cohort": cohort, "cluster_queue_not": queue, "flavor": flavor, "resource": resource}
    per_queue = "sum by (cluster_queue) ({})"
    usage = per_queue.format(select(USAGE, **others))
    nominal = per_queue.format(select(NOMINAL_QUOTA, **others))
    return f"sum(clamp_min({usage} - {nominal}, 0))"


def lent(queue: str, cohort: str, flavor: str, resource: str) -> str:
    """At most what the queue lends: its lendable quota, up to what the rest of the cohort
    borrows. Kueue does not say whose quota a borrower holds, so with two lenders in a cohort
    each one's figure is an upper bound; with one lender it is exact."""
    return _smaller(
        lendable(queue, flavor, resource), borrowed_by_others(queue, cohort, flavor, resource)
    )


def pending(queue: str) -> str:
    """Pending workloads of the queue, per status (active, inadmissible)."""
    return f"sum by (status) ({select(PENDING, cluster_queue=queue)})"


def admission_wait(queue: str, quantile: float) -> str:
    """The `quantile` of the time the queue's workloads waited for admission, over the window."""
    buckets = select(f"{ADMISSION_WAIT}_bucket", cluster_queue=queue)
    return f"histogram_quantile({quantile}, sum by (le) (rate({buckets}[{RATE_WINDOW}])))"


def evictions(queue: str) -> str:
    """The queue's evictions in the last hour, per reason."""
    counter = select(EVICTED, cluster_queue=queue)
    return f"sum by (reason) (increase({counter}[{EVICTION_WINDOW}]))"


def cohort_reserved(cohort: str, flavor: str, resource: str) -> str:
    """What the workloads of the cohort's subtree reserve of `resource` in `flavor`: 0 when they
    reserve none, as Kueue clears the series then rather than setting it to 0 (v0.18's
    cohort_metrics.go), which would leave an idle cohort's panel blank."""
    reserved = select(COHORT_RESERVED, cohort=cohort, flavor=flavor, resource=resource)
    return f"sum({reserved}) or vector(0)"


def cohort_quota(cohort: str, flavor: str, resource: str) -> str:
    """The nominal quota of `resource` in `flavor` of the cohort's whole subtree."""
    return f"sum({select(COHORT_QUOTA, cohort=cohort, flavor=flavor, resource=resource)})"


def local_queue_in_use(namespace: str, name: str, flavor: str, resource: str) -> str:
    """How much of `resource` of `flavor` the LocalQueue's admitted workloads hold."""
    labels = {"namespace": namespace, "name": name, "flavor": flavor, "resource": resource}
    return f"sum({select(LOCAL_QUEUE_USAGE, **labels)})"


def local_queue_pending(namespace: str, name: str) -> str:
    """Pending workloads of the LocalQueue, per status (active, inadmissible)."""
    return f"sum by (status) ({select(LOCAL_QUEUE_PENDING, namespace=namespace, name=name)})"
