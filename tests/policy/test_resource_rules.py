"""Resource rules (1, 2, 5, 7, 8, 9) through faithful ResourceValidationArgs."""

import pytest
from policy_harness import (
    CQ,
    DEPLOYMENT,
    JOB,
    PVC,
    RF,
    SEED_COVERED,
    UNKNOWN,
    cluster_queue,
    flavor,
    job,
    kueue_deployment,
    quota,
    resource_args,
    run_policy,
    seed_queue,
    shared_pvc,
)

from policies import rules
from tests.builders import ClusterQueue, FlavorQuotas, ResourceFlavor

pytestmark = pytest.mark.policy

NAME, FLAVOR = "gpu-cluster-queue", "gpu-flavor"


def check(rule, type_, props, config=None, name="r"):
    return run_policy(rule, resource_args(type_, props, name, config))


def queue(**quotas):
    """The seed's queue with these quotas, in the order written; its one resource group still
    covers cpu, memory and nvidia.com/gpu."""
    return ClusterQueue(NAME).resource_group(
        FlavorQuotas(FLAVOR).quotas(**quotas), covered=SEED_COVERED
    )


def one(messages, *fragments):
    assert len(messages) == 1, messages
    for fragment in fragments:
        assert fragment in messages[0], messages[0]
    return messages[0]


# Rule 1 ---------------------------------------------------------------------------------


def test_seed_cluster_queue_covers_cpu_and_memory():
    assert check(rules.COVERS_CPU_MEMORY, CQ, cluster_queue()) == []


def test_gpu_only_queue_is_rejected_naming_resource_rule_and_fix():
    message = one(
        check(rules.COVERS_CPU_MEMORY, CQ, cluster_queue(covered=["nvidia.com/gpu"]), name="cq"),
        '[clusterqueue-covers-cpu-memory] ClusterQueue "gpu-cluster-queue" (Pulumi resource "cq")',
        "do not include cpu, memory",
        "never admitted",
        "Fix: add 'cpu', 'memory' to a resourceGroup's coveredResources",
    )
    assert "nvidia.com/gpu" in message


def test_cpu_and_memory_may_sit_in_another_resource_group():
    props = seed_queue(covered=["nvidia.com/gpu"]).quota("cpu-flavor", cpu=8, memory="8Gi")
    assert check(rules.COVERS_CPU_MEMORY, CQ, props.obj()) == []


def test_queue_without_resource_groups_is_rejected():
    props = cluster_queue()
    del props["spec"]["resourceGroups"]
    one(check(rules.COVERS_CPU_MEMORY, CQ, props), "coveredResources [none]")


def test_only_memory_missing_names_memory():
    one(check(rules.COVERS_CPU_MEMORY, CQ, cluster_queue(covered=["cpu"])), "do not include memory")


def test_required_resources_are_configurable():
    config = {"requiredResources": ["cpu", "memory", "ephemeral-storage"]}
    one(check(rules.COVERS_CPU_MEMORY, CQ, cluster_queue(), config), "ephemeral-storage")


@pytest.mark.parametrize(
    "groups",
    [
        UNKNOWN,
        [{"coveredResources": UNKNOWN, "flavors": []}],
        [{"coveredResources": ["nvidia.com/gpu", UNKNOWN], "flavors": []}],
    ],
    # Named: UNKNOWN is a new id each run, which would change the tests' ids from run to run.
    ids=["groups", "covered-resources", "one-covered-resource"],
)
def test_unknown_covered_resources_wait_for_the_update(groups):
    props = cluster_queue()
    props["spec"]["resourceGroups"] = groups
    assert check(rules.COVERS_CPU_MEMORY, CQ, props) == []


def test_other_types_are_ignored():
    assert check(rules.COVERS_CPU_MEMORY, PVC, shared_pvc()) == []


def test_v1beta1_cluster_queues_are_checked_too():
    messages = check(
        rules.COVERS_CPU_MEMORY,
        "kubernetes:kueue.x-k8s.io/v1beta1:ClusterQueue",
        cluster_queue(covered=["nvidia.com/gpu"]),
    )
    one(messages, "never admitted")


# Rule 2 ---------------------------------------------------------------------------------


def webhook(props):
    return check(rules.WEBHOOK_VALID, CQ, props)


def test_seed_cluster_queue_is_webhook_valid():
    assert webhook(cluster_queue()) == []


def test_flavor_resources_must_follow_covered_order():
    props = queue(memory="1Gi", cpu=1, gpu=1).obj()
    one(
        webhook(props),
        "resources lists [memory, cpu, nvidia.com/gpu]",
        "in the order of coveredResources",
    )


def test_flavor_must_list_every_covered_resource():
    props = queue(cpu=1, memory="1Gi").obj()
    one(webhook(props), "exactly one quota per covered resource")


def test_resource_in_two_groups_is_rejected():
    props = seed_queue().resource_group(FlavorQuotas("other").quotas(cpu=1)).obj()
    one(
        webhook(props),
        "spec.resourceGroups[1].coveredResources[0]: resource 'cpu' is already covered by "
        "resourceGroups[0]",
    )


def test_flavor_in_two_groups_is_rejected():
    props = seed_queue(covered=["cpu", "memory"]).quota("gpu-flavor", gpu=8).obj()
    one(
        webhook(props),
        "spec.resourceGroups[1].flavors[0].name: flavor 'gpu-flavor' already appears in "
        "resourceGroups[0]",
    )


@pytest.mark.parametrize("bad", ["-1", -4, "8 GPUs", "1gi", True])
def test_invalid_or_negative_nominal_quota_is_rejected(bad):
    props = queue(cpu=bad, memory="1Gi", gpu=8).obj()
    one(webhook(props), "nominalQuota", "Fix: write a non-negative Kubernetes quantity")


def test_missing_nominal_quota_is_rejected():
    no_nominal = FlavorQuotas(FLAVOR).entry({"name": "cpu"}).quotas(memory="1Gi", gpu=8)
    props = ClusterQueue(NAME).resource_group(no_nominal, covered=SEED_COVERED).obj()
    one(webhook(props), "has no nominalQuota")


def test_limits_without_cohort_are_rejected():
    props = queue(cpu=8, memory="1Gi", gpu=8).borrowing(FLAVOR, cpu=2).lending(FLAVOR, memory="1Gi")
    messages = webhook(props.obj())
    assert len(messages) == 2
    assert all("no cohortName" in m and "set spec.cohortName" in m for m in messages)


def test_limits_with_cohort_are_accepted():
    props = (
        queue(cpu=8, memory="2Gi", gpu=8)
        .borrowing(FLAVOR, cpu=2)
        .lending(FLAVOR, memory="1Gi")
        .cohort("research")
    )
    assert webhook(props.obj()) == []


def test_lending_limit_above_nominal_quota_is_rejected_across_units():
    props = queue(cpu=8, memory="1Gi", gpu=8).lending(FLAVOR, memory="1025Mi").cohort("research")
    one(webhook(props.obj()), "lendingLimit 1025Mi is above nominalQuota 1Gi")


def test_lending_limit_equal_to_nominal_in_other_units_is_fine():
    props = queue(cpu="8", memory="1Gi", gpu=8).lending(FLAVOR, cpu="8000m").cohort("research")
    assert webhook(props.obj()) == []


def test_more_than_16_resource_groups_is_rejected():
    props = seed_queue(covered=["cpu", "memory"])
    for i in range(16):  # a group each: each covers another resource
        props.quota(f"f{i}", **{f"example.com/r{i}": 1})
    one(webhook(props.obj()), "17 resourceGroups, more than 16")


def test_empty_covered_resources_and_flavors_are_rejected():
    props = ClusterQueue(NAME).resource_group(covered=[]).obj()
    messages = webhook(props)
    assert any("coveredResources has 0 entries" in m for m in messages)
    assert any("flavors has 0 entries" in m for m in messages)


def test_preemption_combination_the_webhook_rejects():
    props = cluster_queue(
        preemption={
            "reclaimWithinCohort": "Never",
            "borrowWithinCohort": {"policy": "LowerPriority"},
        }
    )
    one(
        webhook(props),
        "borrowWithinCohort.policy is LowerPriority but reclaimWithinCohort is Never",
    )


def test_borrowing_preemption_without_reclaim_is_rejected_as_the_crd_defaults_it_to_never():
    props = cluster_queue(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}})
    one(
        webhook(props),
        "spec.preemption.borrowWithinCohort.policy: borrowWithinCohort.policy is LowerPriority "
        "but reclaimWithinCohort is not set (Kueue defaults it to Never)",
    )
    props["spec"]["preemption"]["reclaimWithinCohort"] = "LowerPriority"
    assert webhook(props) == []
    props["spec"]["preemption"]["reclaimWithinCohort"] = UNKNOWN
    assert webhook(props) == []


def test_every_problem_is_reported_separately():
    props = queue(cpu="-1", memory="x", gpu=8).borrowing(FLAVOR, gpu=1)
    assert len(webhook(props.obj())) == 3


@pytest.mark.parametrize(
    "quotas",
    [
        UNKNOWN,
        [quota("cpu", UNKNOWN), quota("memory", "1Gi"), quota("nvidia.com/gpu", 8)],
        [quota("cpu", 8), quota("memory", "1Gi", lendingLimit=UNKNOWN), quota("nvidia.com/gpu", 8)],
        [quota(UNKNOWN, 8), quota("memory", "1Gi"), quota("nvidia.com/gpu", 8)],
    ],
    ids=["resources", "nominal-quota", "lending-limit", "resource-name"],
)
def test_unknown_quota_values_wait_for_the_update(quotas):
    props = cluster_queue(cohortName="research")
    props["spec"]["resourceGroups"][0]["flavors"][0]["resources"] = quotas
    assert webhook(props) == []


def test_unknown_cohort_allows_limits():
    props = queue(cpu=8, memory="1Gi", gpu=8).borrowing(FLAVOR, cpu=2).cohort(UNKNOWN)
    assert webhook(props.obj()) == []


# Rule 5 ---------------------------------------------------------------------------------


def test_null_namespace_selector_is_rejected():
    props = cluster_queue()
    del props["spec"]["namespaceSelector"]
    one(
        check(rules.NAMESPACE_SELECTOR_SET, CQ, props),
        "selecting no namespace",
        "Fix: set spec.namespaceSelector",
    )


def test_set_namespace_selector_passes_rule_5a():
    assert check(rules.NAMESPACE_SELECTOR_SET, CQ, cluster_queue()) == []


def test_unknown_namespace_selector_is_not_a_violation():
    props = cluster_queue(namespaceSelector=UNKNOWN)
    assert check(rules.NAMESPACE_SELECTOR_SET, CQ, props) == []
    assert check(rules.NAMESPACE_SELECTOR_NOT_ALL, CQ, props) == []


@pytest.mark.parametrize(
    "selector", [{}, {"matchLabels": {}}, {"matchLabels": {}, "matchExpressions": []}]
)
def test_select_all_namespaces_is_flagged(selector):
    one(
        check(rules.NAMESPACE_SELECTOR_NOT_ALL, CQ, cluster_queue(namespaceSelector=selector)),
        "any namespace",
    )


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"team": "research"}},
        {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a"]}
            ]
        },
    ],
)
def test_restricted_namespace_selector_passes(selector):
    assert (
        check(rules.NAMESPACE_SELECTOR_NOT_ALL, CQ, cluster_queue(namespaceSelector=selector)) == []
    )


# Rule 7 ---------------------------------------------------------------------------------


def test_seed_shared_pvc_passes():
    assert check(rules.SHARED_PVC, PVC, shared_pvc()) == []


def test_shared_pvc_must_be_read_write_many():
    one(
        check(rules.SHARED_PVC, PVC, shared_pvc(accessModes=["ReadWriteOnce"])),
        "accessModes are [ReadWriteOnce]",
        "Fix: set accessModes to [ReadWriteMany]",
    )


def test_shared_pvc_must_name_its_volume():
    one(
        check(rules.SHARED_PVC, PVC, shared_pvc(volumeName=None)),
        "spec.volumeName is not set",
        'PersistentVolumeClaim "default/shared-pvc"',
    )


def test_volume_name_known_only_after_update_is_fine():
    assert check(rules.SHARED_PVC, PVC, shared_pvc(volumeName=UNKNOWN, accessModes=UNKNOWN)) == []


def test_claims_on_other_storage_classes_are_not_checked():
    assert (
        check(
            rules.SHARED_PVC,
            PVC,
            shared_pvc(
                storageClassName="local-path", accessModes=["ReadWriteOnce"], volumeName=None
            ),
        )
        == []
    )


def test_shared_storage_class_is_configurable():
    props = shared_pvc(storageClassName="nfs", volumeName=None)
    one(check(rules.SHARED_PVC, PVC, props, {"sharedStorageClass": "nfs"}), "on nfs")


# Rule 8 ---------------------------------------------------------------------------------


def test_pinned_release_passes():
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, kueue_deployment()) == []


@pytest.mark.parametrize(
    "image",
    [
        "registry.k8s.io/kueue/kueue:latest",
        "registry.k8s.io/kueue/kueue:main",
        "registry.k8s.io/kueue/kueue",
        "registry.k8s.io/kueue/kueue:release-0.18",
        "registry.k8s.io/kueue/kueue:v0.18",
        "registry.k8s.io/kueue/kueue:v0.18.3-rc.1",
        "localhost:5000/kueue/kueue",
        "controller:latest",
    ],
)
def test_unpinned_release_is_rejected(image):
    one(
        check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, kueue_deployment(image=image)),
        "not a pinned release vX.Y.Z",
        "Fix:",
    )


@pytest.mark.parametrize(
    "image",
    [
        "localhost:5000/kueue/kueue:v0.18.3",
        "registry.k8s.io/kueue/kueue:v0.18.3@sha256:" + "a" * 64,
    ],
)
def test_registry_port_and_digest_do_not_confuse_the_tag(image):
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, kueue_deployment(image=image)) == []


def test_expected_version_is_enforced_when_configured():
    config = {"expectedVersion": "v0.18.3"}
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, kueue_deployment(), config) == []
    props = kueue_deployment(image="registry.k8s.io/kueue/kueue:v0.17.0")
    one(check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, props, config), "expects v0.18.3")


def test_other_deployments_are_not_checked():
    props = kueue_deployment(image="nginx:latest", sha=None, name="web", namespace="default")
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, props) == []
    assert check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, props) == []


def test_unknown_image_waits_for_the_update():
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, kueue_deployment(image=UNKNOWN)) == []


def test_checksum_annotation_passes():
    assert check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, kueue_deployment()) == []
    assert (
        check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, kueue_deployment(sha="sha256:" + "b" * 64))
        == []
    )


def test_missing_checksum_is_rejected():
    one(
        check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, kueue_deployment(sha=None)),
        "gpu-queues.dev/manifest-sha256 is missing",
        "Fix: set gpu-queues:kueue.manifest.sha256",
    )


def test_malformed_checksum_is_rejected():
    one(
        check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, kueue_deployment(sha="abc")),
        "not a sha256 hex digest",
    )


def test_unknown_checksum_waits_for_the_update():
    assert check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT, kueue_deployment(sha=UNKNOWN)) == []


# Rule 9 ---------------------------------------------------------------------------------


def test_seed_job_passes():
    assert check(rules.JOB_QUEUED_SUSPENDED, JOB, job()) == []


def test_job_without_queue_label_is_rejected():
    one(
        check(rules.JOB_QUEUED_SUSPENDED, JOB, job(labels={})),
        "kueue.x-k8s.io/queue-name is missing",
        "bypasses Kueue",
    )


@pytest.mark.parametrize("suspend", [False, None])
def test_job_not_suspended_is_rejected(suspend):
    one(
        check(rules.JOB_QUEUED_SUSPENDED, JOB, job(suspend=suspend)),
        "spec.suspend is",
        "Fix: set spec.suspend: true",
    )


def test_job_breaking_both_gets_two_messages():
    assert len(check(rules.JOB_QUEUED_SUSPENDED, JOB, job(labels={}, suspend=False))) == 2


def test_unknown_label_and_suspend_wait_for_the_update():
    props = job(labels={"kueue.x-k8s.io/queue-name": UNKNOWN}, suspend=UNKNOWN)
    assert check(rules.JOB_QUEUED_SUSPENDED, JOB, props) == []


def test_exempt_namespaces_are_configurable():
    assert (
        check(rules.JOB_QUEUED_SUSPENDED, JOB, job(labels={}), {"exemptNamespaces": ["default"]})
        == []
    )


# Whole numbers of extended resources, and ResourceFlavor structure ----------------------


def test_half_a_gpu_of_quota_is_rejected():
    props = queue(cpu="500m", memory="1Gi", gpu=0.5).obj()
    one(
        check(rules.WHOLE_EXTENDED_RESOURCES, CQ, props),
        "spec.resourceGroups[0].flavors[0].resources[2].nominalQuota",
        "only whole numbers",
        "Fix: write a whole number of nvidia.com/gpu",
    )
    assert check(rules.WHOLE_EXTENDED_RESOURCES, CQ, cluster_queue()) == []


def test_flavor_the_webhook_would_reject_is_rejected():
    props = ResourceFlavor("gpu-flavor").toleration(key="gpu", operator="Exists", value="yes")
    props = props.obj()
    one(
        check(rules.FLAVOR_WEBHOOK_VALID, RF, props),
        '[resourceflavor-webhook-valid] ResourceFlavor "gpu-flavor"',
        "spec.tolerations[0].value: a value is set but operator is Exists",
    )
    assert check(rules.FLAVOR_WEBHOOK_VALID, RF, flavor()) == []


# Rule 9's and rule 8's blind spots (issue 42, class 7) ----------------------------------

CRONJOB = "kubernetes:batch/v1:CronJob"
QUEUE = "kueue.x-k8s.io/queue-name"


def cron_job(labels=None, suspend=True):
    """A CronJob whose jobs are the guide's gpu-job-a (its labels and suspend in jobTemplate)."""
    made = job(labels=labels, suspend=suspend)
    template = {"metadata": {"labels": made["metadata"]["labels"]}, "spec": made["spec"]}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "default"},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": template},
    }


def gpu_pod_template(gpus=2, labels=None):
    return {
        "metadata": {"labels": labels or {"app": "serve"}},
        "spec": {
            "containers": [
                {"name": "serve", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": gpus}}}
            ]
        },
    }


def workload(kind, api_version, labels=None, gpus=2, spec_path=("template",)):
    """A `kind` whose pod template (at spec.<spec_path>) asks for `gpus` GPUs."""
    spec = {}
    node = spec
    for key in spec_path[:-1]:
        node = node.setdefault(key, {})
    node[spec_path[-1]] = gpu_pod_template(gpus)
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "w", "namespace": "default", "labels": labels or {"app": "serve"}},
        "spec": spec,
    }


def test_a_cron_job_whose_jobs_name_a_queue_and_start_suspended_passes():
    assert check(rules.JOB_QUEUED_SUSPENDED, CRONJOB, cron_job()) == []


def test_a_cron_job_whose_jobs_name_no_queue_is_rejected():
    # Its Jobs would bypass Kueue's quota: the rule looked at Jobs only.
    one(
        check(rules.JOB_QUEUED_SUSPENDED, CRONJOB, cron_job(labels={})),
        f"label {QUEUE} is missing in spec.jobTemplate.metadata, so the job bypasses Kueue",
        f"Fix: add spec.jobTemplate.metadata.labels[{QUEUE!r}]",
    )


def test_a_cron_job_whose_jobs_are_not_suspended_is_rejected():
    one(
        check(rules.JOB_QUEUED_SUSPENDED, CRONJOB, cron_job(suspend=False)),
        "spec.jobTemplate.spec.suspend is False",
        "Fix: set spec.jobTemplate.spec.suspend: true",
    )


@pytest.mark.parametrize(
    ("type_", "props"),
    [
        ("kubernetes:core/v1:Pod",
         {**workload("Pod", "v1"), "spec": gpu_pod_template()["spec"]}),
        ("kubernetes:apps/v1:Deployment", workload("Deployment", "apps/v1")),
        ("kubernetes:apps/v1:StatefulSet", workload("StatefulSet", "apps/v1")),
        ("kubernetes:apiextensions.k8s.io:CustomResource",
         workload("JobSet", "jobset.x-k8s.io/v1alpha2",
                  spec_path=("replicatedJobs", "template"))),
        ("kubernetes:apiextensions.k8s.io:CustomResource",
         workload("PyTorchJob", "kubeflow.org/v1",
                  spec_path=("pytorchReplicaSpecs", "Worker", "template"))),
        ("kubernetes:ray.io/v1:RayJob",
         workload("RayJob", "ray.io/v1",
                  spec_path=("rayClusterSpec", "headGroupSpec", "template"))),
    ],
    ids=["pod", "deployment", "statefulset", "jobset", "pytorchjob", "rayjob"],
)  # fmt: skip
def test_any_workload_asking_for_gpus_without_a_queue_is_rejected(type_, props):
    one(
        check(rules.JOB_QUEUED_SUSPENDED, type_, props),
        f"it asks for GPUs without label {QUEUE}, so its pods bypass Kueue",
    )
    labelled = {**props, "metadata": {**props["metadata"], "labels": {QUEUE: "gpu-queue"}}}
    assert check(rules.JOB_QUEUED_SUSPENDED, type_, labelled) == []


@pytest.mark.parametrize("kind", ["DaemonSet", "ReplicaSet"])
def test_gpus_in_a_kind_kueue_cannot_manage_are_rejected_even_with_a_queue(kind):
    props = workload(kind, "apps/v1", labels={QUEUE: "gpu-queue"})
    one(
        check(rules.JOB_QUEUED_SUSPENDED, f"kubernetes:apps/v1:{kind}", props),
        f"Kueue cannot manage a {kind}, so its pods run without quota",
    )


@pytest.mark.parametrize("gpus", [0, "0", UNKNOWN])
def test_workloads_without_gpus_or_not_known_yet_are_not_checked(gpus):
    for kind in ("Deployment", "DaemonSet"):
        props = workload(kind, "apps/v1", gpus=gpus)
        assert check(rules.JOB_QUEUED_SUSPENDED, f"kubernetes:apps/v1:{kind}", props) == []


def test_exempt_namespaces_cover_every_kind():
    props = workload("Deployment", "apps/v1")
    config = {"exemptNamespaces": ["default"]}
    assert check(rules.JOB_QUEUED_SUSPENDED, DEPLOYMENT, props, config) == []
    assert check(rules.JOB_QUEUED_SUSPENDED, CRONJOB, cron_job(labels={}), config) == []


def test_a_job_patch_is_judged_on_what_it_sets():
    patch = "kubernetes:batch/v1:JobPatch"
    unsuspend = {"metadata": {"name": "gpu-job-a", "namespace": "default"}, "spec": {}}
    assert check(rules.JOB_QUEUED_SUSPENDED, patch, unsuspend) == []
    unsuspend["spec"]["suspend"] = False
    one(check(rules.JOB_QUEUED_SUSPENDED, patch, unsuspend), "spec.suspend is False")
    unlabel = {"metadata": {"name": "gpu-job-a", "namespace": "default", "labels": {QUEUE: ""}}}
    one(check(rules.JOB_QUEUED_SUSPENDED, patch, unlabel), f"label {QUEUE} is empty")


DEPLOYMENT_PATCH = "kubernetes:apps/v1:DeploymentPatch"


def controller_patch(image):
    patched = kueue_deployment(image=image, sha=None)
    del patched["spec"]["replicas"], patched["spec"]["selector"]
    return patched


@pytest.mark.parametrize(
    "image", ["registry.k8s.io/kueue/kueue:latest", "attacker.example/kueue:main", "evil"]
)
def test_a_patch_that_changes_the_controllers_image_is_held_to_the_pin(image):
    # A DeploymentPatch of kueue-system/kueue-controller-manager replaced the pinned image,
    # and the rule looked at Deployments only.
    one(
        check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT_PATCH, controller_patch(image)),
        f"runs image {image}",
        "not a pinned release vX.Y.Z",
    )


def test_a_patch_to_another_release_than_the_expected_one_is_rejected():
    config = {"expectedVersion": "v0.18.3"}
    props = controller_patch("registry.k8s.io/kueue/kueue:v0.17.0")
    one(check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT_PATCH, props, config), "expects v0.18.3")
    props = controller_patch("registry.k8s.io/kueue/kueue:v0.18.3")
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT_PATCH, props, config) == []


def test_an_init_container_of_the_controller_is_held_to_the_pin_too():
    props = kueue_deployment()
    props["spec"]["template"]["spec"]["initContainers"] = [{"name": "pre", "image": "x:latest"}]
    one(check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT, props), "container pre runs image x:latest")


def test_a_deployment_list_holding_the_controller_is_held_to_the_pin():
    listed = {"items": [kueue_deployment(image="web:1", name="web", namespace="default"),
                        kueue_deployment(image="registry.k8s.io/kueue/kueue:latest")]}  # fmt: skip
    one(
        check(rules.KUEUE_RELEASE_PINNED, "kubernetes:apps/v1:DeploymentList", listed),
        "kueue/kueue:latest",
    )


def test_a_patch_of_another_deployment_or_without_containers_is_not_checked():
    other = {**controller_patch("nginx:latest"), "metadata": {"name": "web", "namespace": "x"}}
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT_PATCH, other) == []
    scale = {"metadata": {"name": "kueue-controller-manager", "namespace": "kueue-system"},
             "spec": {"replicas": 2}}  # fmt: skip
    assert check(rules.KUEUE_RELEASE_PINNED, DEPLOYMENT_PATCH, scale) == []
    # The checksum rule reads the release's own Deployment only: a patch carries no manifest.
    assert check(rules.KUEUE_RELEASE_CHECKSUM, DEPLOYMENT_PATCH, scale) == []
