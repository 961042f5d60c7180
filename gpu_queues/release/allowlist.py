"""What a Kueue release manifest may contain; everything else is refused before it is applied.

The manifest is another project's output, fetched from a URL or a file that an attacker may
control (a mirror, a path in a checkout), with or without a configured sha256. So its objects
are checked against what a Kueue release ships, derived from the release manifest of the
pinned version (rendered from config/default of the Kueue module; v0.18.3 and v0.19.2 ship
the same inventory): one namespace, kueue-system, holding the controller Deployment, its
ServiceAccount, Roles, RoleBindings, Services, the manager ConfigMap and an empty certificate
Secret; cluster-wide only Kueue's CRDs, `kueue-` ClusterRoles and ClusterRoleBindings to
its own ServiceAccount, `kueue-` webhook configurations and the visibility APIServices,
all pointing at Services in kueue-system; one RoleBinding in kube-system that lets the
visibility server read the API server's client CA (the pattern every aggregated API server
uses). Kinds are matched by API group, namespaces and names exactly, so nothing passes on a
look-alike. The checks are pure functions over parsed objects and return every refusal at
once, each naming the document, the object and the reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

KUEUE_NAMESPACE: Final = "kueue-system"
NAME_PREFIX: Final = "kueue-"
KUEUE_GROUP: Final = "kueue.x-k8s.io"
IMAGE_REPOSITORY: Final = "registry.k8s.io/kueue/kueue"
CONTROLLER_DEPLOYMENT: Final = "kueue-controller-manager"
MANAGER_CONTAINER: Final = "manager"
MANAGER_COMMAND: Final = ("/manager",)
MANAGER_CONFIGMAP: Final = "kueue-manager-config"
MANAGER_CONFIG_KEY: Final = "controller_manager_config.yaml"
# What the release's manager Configuration sets: wiring (ports, probes, leader election,
# client rate, concurrency) and the default integrations. Settings that change what Kueue
# manages (manageJobsWithoutQueueName, managedJobsNamespaceSelector, waitForPodsReady,
# featureGates, ...) come from the stack config (gpu-queues:kueue.manager), never from it.
RELEASE_CONFIG_KEYS: Final = frozenset(
    {
        "apiVersion",
        "kind",
        "health",
        "metrics",
        "webhook",
        "leaderElection",
        "controller",
        "clientConnection",
        "integrations",
    }
)
# Keys under these prefixes are the program's own record (manifest checksum, config hash) or
# steer how the provider applies objects: a manifest that carries one is trying to speak for
# the program.
OWN_KEY_PREFIXES: Final = ("gpu-queues.dev/", "pulumi.com/")
# Aggregated API servers read the API server's client CA through this built-in Role.
AUTH_READER_ROLE: Final = "extension-apiserver-authentication-reader"
AUTH_READER_NAMESPACE: Final = "kube-system"

_RBAC = "rbac.authorization.k8s.io"
_AGGREGATE_LABEL = "rbac.authorization.k8s.io/aggregate-to-"
_KUEUE_RBAC_LABEL_PREFIX = "rbac.kueue.x-k8s.io/"
_READ_VERBS = frozenset({"get", "list", "watch"})
_ESCALATING_VERBS = frozenset({"escalate", "bind", "impersonate"})
# Subresources that hand out more than the resource itself: a shell in a pod, a token for
# any ServiceAccount, the kubelet API, approval of certificates.
_POWERFUL_SUBRESOURCES = frozenset(
    {
        "pods/exec",
        "pods/attach",
        "pods/portforward",
        "pods/ephemeralcontainers",
        "nodes/proxy",
        "serviceaccounts/token",
        "certificatesigningrequests/approval",
        "signers",
    }
)
_BUILTIN_ROLES = frozenset({"cluster-admin", "admin", "edit", "view"})
# Webhooks on these groups would put Kueue in the path of the cluster's own machinery.
_PROTECTED_WEBHOOK_GROUPS = frozenset(
    {
        _RBAC,
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "certificates.k8s.io",
        "coordination.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    }
)
# Environment that changes where the controller's client connects or whom it trusts.
_REDIRECTING_ENV = re.compile(r"^(KUBERNETES_.*|.*_PROXY|SSL_CERT_.*|GODEBUG)$", re.IGNORECASE)
_POD_VOLUME_TYPES = frozenset({"emptyDir", "secret", "configMap", "projected", "downwardAPI"})


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    namespaced: bool
    fields: frozenset[str] = frozenset({"spec"})
    """Top-level fields besides apiVersion, kind, metadata and status."""


# Every kind a Kueue release ships, at the API version it ships it in.
RELEASE_KINDS: Final = {
    (k.api_version, k.kind): k
    for k in (
        Kind("v1", "Namespace", False),
        Kind(
            "v1",
            "ServiceAccount",
            True,
            frozenset({"secrets", "imagePullSecrets", "automountServiceAccountToken"}),
        ),
        Kind("v1", "ConfigMap", True, frozenset({"data", "binaryData", "immutable"})),
        Kind("v1", "Secret", True, frozenset({"data", "stringData", "type", "immutable"})),
        Kind("v1", "Service", True),
        Kind("apps/v1", "Deployment", True),
        Kind(f"{_RBAC}/v1", "Role", True, frozenset({"rules"})),
        Kind(f"{_RBAC}/v1", "RoleBinding", True, frozenset({"roleRef", "subjects"})),
        Kind(f"{_RBAC}/v1", "ClusterRole", False, frozenset({"rules", "aggregationRule"})),
        Kind(f"{_RBAC}/v1", "ClusterRoleBinding", False, frozenset({"roleRef", "subjects"})),
        Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition", False),
        Kind(
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            False,
            frozenset({"webhooks"}),
        ),
        Kind(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            False,
            frozenset({"webhooks"}),
        ),
        Kind("apiregistration.k8s.io/v1", "APIService", False),
    )
}


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def is_kueue_group(group: str) -> bool:
    """kueue.x-k8s.io and its subgroups (visibility.kueue.x-k8s.io, config.kueue...)."""
    return group == KUEUE_GROUP or group.endswith("." + KUEUE_GROUP)


def expected_image(version: str) -> str:
    return f"{IMAGE_REPOSITORY}:{version}"


@dataclass(frozen=True)
class Refusal:
    """One manifest object that is not applied, and why."""

    index: int | None
    """The object's document index in the manifest file (0-based, empty documents counted);
    None for an object that is missing."""
    kind: str
    namespace: str | None
    name: str
    reason: str

    @property
    def object(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}"

    def __str__(self) -> str:
        if self.index is None:
            return f"{self.object}: {self.reason}"
        return f"document {self.index}: {self.object}: {self.reason}"


@dataclass(frozen=True)
class Document:
    """One object of the manifest with its document index in the file."""

    index: int
    obj: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind"))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion"))

    @property
    def group(self) -> str:
        return group_of(self.api_version)

    @property
    def name(self) -> str:
        return str(_map(self.obj.get("metadata")).get("name"))

    @property
    def namespace(self) -> str | None:
        ns = _map(self.obj.get("metadata")).get("namespace")
        return ns if isinstance(ns, str) and ns else None

    def key(self) -> tuple[str, str, str | None, str]:
        """Identity in the cluster: API group, kind, namespace, name (version aside)."""
        return (self.group, self.kind, self.namespace, self.name)

    def refuse(self, reason: str) -> Refusal:
        return Refusal(self.index, self.kind, self.namespace, self.name, reason)


# --- small accessors that never raise on hostile shapes ------------------------------------


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _seq(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strs(value: Any) -> list[str]:
    return [str(v) for v in _seq(value)]


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _own_keys(node: Any, path: str = "") -> Iterator[str]:
    """Paths of mapping keys under the program's own prefix, anywhere in the object."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and key.startswith(OWN_KEY_PREFIXES):
                yield here
            yield from _own_keys(value, here)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _own_keys(item, f"{path}[{i}]")


# --- the inventory: what the manifest defines, for cross references ------------------------


@dataclass(frozen=True)
class Inventory:
    service_accounts: frozenset[str]
    services: frozenset[str]
    roles: frozenset[str]
    cluster_roles: frozenset[str]

    @classmethod
    def of(cls, docs: Sequence[Document]) -> Inventory:
        def names(group: str, kind: str, namespace: str | None) -> frozenset[str]:
            return frozenset(
                d.name
                for d in docs
                if d.group == group and d.kind == kind and d.namespace == namespace
            )

        return cls(
            service_accounts=names("", "ServiceAccount", KUEUE_NAMESPACE),
            services=names("", "Service", KUEUE_NAMESPACE),
            roles=names(_RBAC, "Role", KUEUE_NAMESPACE),
            cluster_roles=names(_RBAC, "ClusterRole", None),
        )


# --- per-kind checks ------------------------------------------------------------------------


def _check_rules(doc: Document, cluster_wide: bool) -> list[str]:
    """RBAC rules must not be able to grow themselves or reach beyond Kueue's needs."""
    problems: list[str] = []
    aggregated = sorted(
        k[len(_AGGREGATE_LABEL) :]
        for k, v in _map(_get(doc.obj, "metadata", "labels")).items()
        if isinstance(k, str) and k.startswith(_AGGREGATE_LABEL) and str(v).lower() == "true"
    )
    for i, raw in enumerate(_seq(doc.obj.get("rules"))):
        rule = _map(raw)
        groups, resources = _strs(rule.get("apiGroups")), _strs(rule.get("resources"))
        verbs, urls = _strs(rule.get("verbs")), _strs(rule.get("nonResourceURLs"))
        where = f"rules[{i}]"
        wild = [
            field
            for field, values in (
                ("apiGroups", groups),
                ("resources", resources),
                ("verbs", verbs),
                ("nonResourceURLs", urls),
            )
            if any("*" in v for v in values)
        ]
        if wild:
            problems.append(f"{where} uses a wildcard in {', '.join(wild)}")
        if escalating := sorted(set(verbs) & _ESCALATING_VERBS):
            problems.append(f"{where} grants {', '.join(escalating)}, which lets it grant itself")
        if _RBAC in groups:
            problems.append(f"{where} grants access to RBAC objects")
        if powerful := sorted(set(resources) & _POWERFUL_SUBRESOURCES):
            problems.append(f"{where} grants {', '.join(powerful)}")
        if cluster_wide and "" in groups and "secrets" in resources:
            problems.append(
                f"{where} grants Secrets in every namespace (a release reads its certificate "
                f"through a Role in {KUEUE_NAMESPACE} only)"
            )
        if aggregated:
            if extra := sorted(set(verbs) - _READ_VERBS):
                problems.append(
                    f"{where} grants {', '.join(extra)} while the role is aggregated into the "
                    f"built-in {'/'.join(aggregated)} role(s); aggregated roles only read"
                )
            if "" in groups:
                problems.append(
                    f"{where} grants core resources ({', '.join(resources)}) while aggregated "
                    f"into the built-in {'/'.join(aggregated)} role(s)"
                )
    return problems


def _check_cluster_role(doc: Document) -> list[str]:
    problems = _check_rules(doc, cluster_wide=True)
    for term in _seq(_get(doc.obj, "aggregationRule", "clusterRoleSelectors")):
        keys = list(_map(_get(term, "matchLabels")))
        keys += [str(_get(e, "key")) for e in _seq(_get(term, "matchExpressions"))]
        foreign = sorted(k for k in keys if not str(k).startswith(_KUEUE_RBAC_LABEL_PREFIX))
        if foreign:
            problems.append(
                f"aggregationRule selects roles by {', '.join(foreign)}, not only by Kueue's "
                f"{_KUEUE_RBAC_LABEL_PREFIX}* labels, so it could collect other roles' rights"
            )
        if not keys:
            problems.append("aggregationRule has an empty selector, which collects every role")
    return problems


def _check_subjects(doc: Document, inv: Inventory) -> list[str]:
    subjects = _seq(doc.obj.get("subjects"))
    if not subjects:
        return ["has no subjects"]
    problems = []
    for i, raw in enumerate(subjects):
        subject = _map(raw)
        kind, name, ns = subject.get("kind"), subject.get("name"), subject.get("namespace")
        if kind != "ServiceAccount" or ns != KUEUE_NAMESPACE:
            shown = f"{kind} {ns + '/' if isinstance(ns, str) else ''}{name}"
            problems.append(
                f"subjects[{i}] is {shown}: a release binds roles only to its own "
                f"ServiceAccount in {KUEUE_NAMESPACE}"
            )
        elif name not in inv.service_accounts:
            problems.append(
                f"subjects[{i}] is ServiceAccount {KUEUE_NAMESPACE}/{name}, which this manifest "
                "does not define"
            )
    return problems


def _role_ref(doc: Document) -> tuple[str, str, str]:
    ref = _map(doc.obj.get("roleRef"))
    return str(ref.get("apiGroup")), str(ref.get("kind")), str(ref.get("name"))


def _builtin(name: str) -> bool:
    return name in _BUILTIN_ROLES or name.startswith("system:")


def _check_cluster_role_binding(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    group, kind, name = _role_ref(doc)
    if group != _RBAC or kind != "ClusterRole":
        problems.append(f"roleRef is {kind} {name} of group {group!r}, not a ClusterRole")
    elif _builtin(name):
        problems.append(f"binds the built-in ClusterRole {name}")
    elif name not in inv.cluster_roles:
        problems.append(f"binds ClusterRole {name}, which this manifest does not define")
    return problems + _check_subjects(doc, inv)


def _check_role_binding(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    group, kind, name = _role_ref(doc)
    if doc.namespace == AUTH_READER_NAMESPACE:
        if (group, kind, name) != (_RBAC, "Role", AUTH_READER_ROLE):
            problems.append(
                f"in {AUTH_READER_NAMESPACE} a release only binds Role {AUTH_READER_ROLE}, "
                f"not {kind} {name}"
            )
    elif group != _RBAC:
        problems.append(f"roleRef group {group!r} is not {_RBAC}")
    elif kind == "ClusterRole" and _builtin(name):
        problems.append(f"binds the built-in ClusterRole {name}")
    elif kind == "ClusterRole" and name not in inv.cluster_roles:
        problems.append(f"binds ClusterRole {name}, which this manifest does not define")
    elif kind == "Role" and name not in inv.roles:
        problems.append(f"binds Role {name}, which this manifest does not define")
    elif kind not in ("Role", "ClusterRole"):
        problems.append(f"roleRef kind {kind!r} is not Role or ClusterRole")
    return problems + _check_subjects(doc, inv)


def _check_service_ref(ref: Any, inv: Inventory, where: str) -> list[str]:
    service = _map(ref)
    ns, name = service.get("namespace"), service.get("name")
    if ns != KUEUE_NAMESPACE or name not in inv.services:
        return [
            f"{where} points at Service {ns}/{name}; it must be a Service of this manifest in "
            f"{KUEUE_NAMESPACE}"
        ]
    return []


def _check_client_config(config: Any, inv: Inventory, where: str) -> list[str]:
    if _get(config, "url") is not None:
        return [f"{where} sends requests to a URL ({_get(config, 'url')}), not to Kueue's Service"]
    return _check_service_ref(_get(config, "service"), inv, f"{where}.service")


def _excludes_kube_system(selector: Any) -> bool:
    for expr in _seq(_get(selector, "matchExpressions")):
        if (
            _get(expr, "key") == "kubernetes.io/metadata.name"
            and _get(expr, "operator") == "NotIn"
            and AUTH_READER_NAMESPACE in _strs(_get(expr, "values"))
        ):
            return True
    return False


def _check_webhooks(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    webhooks = _seq(doc.obj.get("webhooks"))
    for i, raw in enumerate(webhooks):
        hook = _map(raw)
        where = f"webhooks[{i}] ({hook.get('name')})"
        problems += _check_client_config(hook.get("clientConfig"), inv, f"{where}.clientConfig")
        foreign = False
        for j, rule in enumerate(_seq(hook.get("rules"))):
            groups, resources = _strs(_get(rule, "apiGroups")), _strs(_get(rule, "resources"))
            if any("*" in v for v in groups + resources):
                problems.append(f"{where}.rules[{j}] uses a wildcard: it would see every object")
            if protected := sorted(set(groups) & _PROTECTED_WEBHOOK_GROUPS):
                problems.append(f"{where}.rules[{j}] intercepts {', '.join(protected)}")
            if "" in groups and (core := sorted(set(resources) - {"pods"})):
                problems.append(
                    f"{where}.rules[{j}] intercepts core {', '.join(core)} (a release only "
                    "intercepts pods among the core resources)"
                )
            foreign = foreign or any(not is_kueue_group(g) for g in groups)
        if foreign and not _excludes_kube_system(hook.get("namespaceSelector")):
            problems.append(
                f"{where} intercepts objects outside Kueue's API without a namespaceSelector "
                f"excluding {AUTH_READER_NAMESPACE} (every release webhook of that kind has one)"
            )
    return problems


def _check_crd(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    spec = _map(doc.obj.get("spec"))
    group = str(spec.get("group"))
    plural = _get(spec, "names", "plural")
    if not is_kueue_group(group):
        problems.append(f"defines API group {group!r}, not Kueue's ({KUEUE_GROUP})")
    if doc.name != f"{plural}.{group}":
        problems.append(f"name is not <plural>.<group> ({plural}.{group})")
    conversion = _map(spec.get("conversion"))
    if conversion.get("strategy") == "Webhook":
        problems += _check_client_config(
            _get(conversion, "webhook", "clientConfig"), inv, "spec.conversion.webhook.clientConfig"
        )
    return problems


def _check_api_service(doc: Document, inv: Inventory) -> list[str]:
    problems = []
    spec = _map(doc.obj.get("spec"))
    group, version = str(spec.get("group")), str(spec.get("version"))
    if not is_kueue_group(group):
        problems.append(f"serves API group {group!r}, not one of Kueue's (*.{KUEUE_GROUP})")
    if doc.name != f"{version}.{group}":
        problems.append(f"name is not <version>.<group> ({version}.{group})")
    problems += _check_service_ref(spec.get("service"), inv, "spec.service")
    return problems


def _check_service(doc: Document) -> list[str]:
    spec = _map(doc.obj.get("spec"))
    problems = []
    if spec.get("type", "ClusterIP") != "ClusterIP":
        problems.append(f"is of type {spec.get('type')}: a release exposes nothing outside")
    if spec.get("externalIPs") or spec.get("externalName"):
        problems.append("sets externalIPs or externalName, which can capture other traffic")
    return problems


def _check_secret(doc: Document) -> list[str]:
    problems = []
    if doc.obj.get("data") or doc.obj.get("stringData"):
        problems.append(
            "carries data: a release ships its certificate Secret empty and Kueue fills it, "
            "so content here would plant credentials"
        )
    if doc.obj.get("type", "Opaque") != "Opaque":
        problems.append(f"has type {doc.obj.get('type')}, not Opaque")
    return problems


def _check_manager_config(doc: Document) -> list[str]:
    text = _map(doc.obj.get("data")).get(MANAGER_CONFIG_KEY)
    if not isinstance(text, str):
        return [f"has no {MANAGER_CONFIG_KEY}, Kueue's manager Configuration"]
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        config = None
    if not isinstance(config, dict) or config.get("kind", "Configuration") != "Configuration":
        return [f"{MANAGER_CONFIG_KEY} is not Kueue's Configuration (a YAML mapping)"]
    problems = []
    if extra := sorted(set(config) - RELEASE_CONFIG_KEYS):
        problems.append(
            f"{MANAGER_CONFIG_KEY} sets {', '.join(map(str, extra))}: a release leaves what "
            "Kueue manages to the stack config (gpu-queues:kueue.manager)"
        )
    if extra := sorted(set(_map(config.get("integrations"))) - {"frameworks"}):
        problems.append(
            f"{MANAGER_CONFIG_KEY} sets integrations.{', integrations.'.join(map(str, extra))}, "
            "which a release leaves to the stack config"
        )
    return problems


def _check_security_context(context: Any, where: str, pod: bool) -> list[str]:
    ctx = _map(context)
    problems = []
    if ctx.get("privileged") is True:
        problems.append(f"{where} is privileged")
    if ctx.get("allowPrivilegeEscalation") is True:
        problems.append(f"{where} allows privilege escalation")
    if added := _strs(_get(ctx, "capabilities", "add")):
        problems.append(f"{where} adds capabilities {', '.join(added)}")
    if ctx.get("runAsUser") == 0 or ctx.get("runAsNonRoot") is False:
        problems.append(f"{where} runs as root")
    if ctx.get("procMount") not in (None, "Default"):
        problems.append(f"{where} unmasks /proc")
    for field in ("seccompProfile", "appArmorProfile"):
        if _get(ctx, field, "type") == "Unconfined":
            problems.append(f"{where} runs with {field} Unconfined")
    if ctx.get("seLinuxOptions"):
        problems.append(f"{where} sets SELinux options (a release sets none)")
    if pod and _map(ctx.get("windowsOptions")).get("hostProcess") is True:
        problems.append(f"{where} is a host process")
    return problems


def _check_deployment(doc: Document, inv: Inventory, version: str) -> list[str]:
    if doc.name != CONTROLLER_DEPLOYMENT:
        return [
            f"a release runs one workload, Deployment {KUEUE_NAMESPACE}/{CONTROLLER_DEPLOYMENT}"
        ]
    pod = _map(_get(doc.obj, "spec", "template", "spec"))
    problems = []
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.get(field) is True:
            problems.append(f"the pod sets {field}")
    problems += _check_security_context(pod.get("securityContext"), "the pod", pod=True)
    for field in ("initContainers", "ephemeralContainers"):
        if pod.get(field):
            problems.append(f"the pod has {field}: a release runs only the manager container")
    accounts = {pod.get("serviceAccountName"), pod.get("serviceAccount")} - {None}
    for account in sorted(map(str, accounts)) or ["default"]:
        if account not in inv.service_accounts:
            problems.append(
                f"the pod runs as ServiceAccount {account}, not one this manifest defines in "
                f"{KUEUE_NAMESPACE}"
            )
    containers = _seq(pod.get("containers"))
    names = [_map(c).get("name") for c in containers]
    if names != [MANAGER_CONTAINER]:
        problems.append(
            f"the pod runs containers {names}; a release runs exactly one, {MANAGER_CONTAINER!r}"
        )
    for raw in containers:
        container = _map(raw)
        where = f"container {container.get('name')}"
        image = container.get("image")
        if image != expected_image(version):
            problems.append(f"{where} runs image {image}; {image_mismatch(image, version)}")
        command = container.get("command")
        if command is not None and tuple(_strs(command)) != MANAGER_COMMAND:
            problems.append(f"{where} runs command {command}, not {list(MANAGER_COMMAND)}")
        problems += _check_security_context(container.get("securityContext"), where, pod=False)
        if any(_map(p).get("hostPort") for p in _seq(container.get("ports"))):
            problems.append(f"{where} binds a host port")
        if container.get("envFrom"):
            problems.append(f"{where} takes its environment from other objects (envFrom)")
        redirecting = sorted(
            str(name)
            for name in (_map(e).get("name") for e in _seq(container.get("env")))
            if _REDIRECTING_ENV.match(str(name))
        )
        if redirecting:
            problems.append(
                f"{where} sets {', '.join(redirecting)}, which redirect or re-trust the "
                "controller's connections to the API server"
            )
    for raw in _seq(pod.get("volumes")):
        volume = _map(raw)
        types = sorted(set(volume) - {"name"})
        if not set(types) <= _POD_VOLUME_TYPES:
            problems.append(
                f"volume {volume.get('name')} is of type {', '.join(types)}; a release mounts "
                f"only {', '.join(sorted(_POD_VOLUME_TYPES))}"
            )
    return problems


def image_mismatch(image: Any, version: str) -> str:
    """Why an image reference is not the one Kueue `version` ships, for error messages."""
    expected = expected_image(version)
    if not isinstance(image, str):
        return f"expected {expected}"
    if "@" in image:
        return (
            f"a digest cannot be tied to Kueue {version} without the registry; expected "
            f"{expected} (kueue.version). See docs/kueue-manifest.md on mirrors"
        )
    repository, _, tag = image.rpartition(":")
    if "/" in tag or not repository:
        repository, tag = image, ""
    if repository != IMAGE_REPOSITORY:
        return (
            f"expected {expected}. The image must be Kueue's official one; pull it through a "
            "registry mirror configured on the nodes instead (docs/kueue-manifest.md)"
        )
    return (
        f"its tag {tag or '(none)'} is not kueue.version {version}: the manifest and the "
        "version do not belong together"
    )


# --- the whole manifest ---------------------------------------------------------------------


def _check_one(doc: Document, inv: Inventory, version: str) -> list[str]:
    kind = RELEASE_KINDS.get((doc.api_version, doc.kind))
    if kind is None:
        if is_kueue_group(doc.group):
            return [
                f"{doc.kind} is a Kueue API object, not part of a release: queues, flavors and "
                "cohorts come from the stack config"
            ]
        known = any(k.kind == doc.kind for k in RELEASE_KINDS.values())
        if known:
            return [f"apiVersion {doc.api_version} is not the one a Kueue release uses"]
        return [f"kind {doc.kind} ({doc.api_version}) is not something a Kueue release ships"]
    unknown = sorted(set(doc.obj) - kind.fields - {"apiVersion", "kind", "metadata", "status"})
    if unknown:
        return [f"has top-level field(s) {', '.join(map(str, unknown))}, unknown to a {doc.kind}"]
    if kind.namespaced:
        if doc.namespace is None:
            return [
                "has no namespace, so it would land in whatever namespace the provider defaults "
                f"to; a release puts it in {KUEUE_NAMESPACE}"
            ]
        allowed = {KUEUE_NAMESPACE}
        if doc.kind == "RoleBinding":
            allowed.add(AUTH_READER_NAMESPACE)
        if doc.namespace not in allowed:
            return [f"is in namespace {doc.namespace}; a release keeps it in {KUEUE_NAMESPACE}"]
    elif doc.namespace is not None:
        return [f"is cluster-scoped but names namespace {doc.namespace}"]

    match doc.kind:
        case "Namespace":
            if doc.name != KUEUE_NAMESPACE:
                return [f"a release creates only namespace {KUEUE_NAMESPACE}"]
            return []
        case (
            "ClusterRole"
            | "ClusterRoleBinding"
            | "MutatingWebhookConfiguration"
            | ("ValidatingWebhookConfiguration")
        ) if not doc.name.startswith(NAME_PREFIX):
            return [f"cluster-wide {doc.kind} names of a release start with {NAME_PREFIX!r}"]
        case "RoleBinding" if doc.namespace != KUEUE_NAMESPACE and not doc.name.startswith(
            NAME_PREFIX
        ):
            return [f"a release's RoleBinding in {doc.namespace} starts with {NAME_PREFIX!r}"]
        case "ClusterRole":
            return _check_cluster_role(doc)
        case "Role":
            return _check_rules(doc, cluster_wide=False)
        case "ClusterRoleBinding":
            return _check_cluster_role_binding(doc, inv)
        case "RoleBinding":
            return _check_role_binding(doc, inv)
        case "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration":
            return _check_webhooks(doc, inv)
        case "CustomResourceDefinition":
            return _check_crd(doc, inv)
        case "APIService":
            return _check_api_service(doc, inv)
        case "Service":
            return _check_service(doc)
        case "Secret":
            return _check_secret(doc)
        case "ConfigMap" if doc.name == MANAGER_CONFIGMAP:
            return _check_manager_config(doc)
        case "Deployment":
            return _check_deployment(doc, inv, version)
    return []


REQUIRED: Final = (
    ("", "Namespace", None, KUEUE_NAMESPACE),
    ("apps", "Deployment", KUEUE_NAMESPACE, CONTROLLER_DEPLOYMENT),
    ("", "ConfigMap", KUEUE_NAMESPACE, MANAGER_CONFIGMAP),
)


def check_release(docs: Sequence[Document], version: str) -> list[Refusal]:
    """Every reason the manifest is not a Kueue `version` release; empty when it is one."""
    refusals: list[Refusal] = []
    inv = Inventory.of(docs)
    seen: dict[tuple[str, str, str | None, str], int] = {}
    for doc in docs:
        for path in _own_keys(doc.obj):
            refusals.append(
                doc.refuse(
                    f"carries {path}: {' and '.join(p + '*' for p in OWN_KEY_PREFIXES)} keys are "
                    "written by this program only (the manifest checksum is recorded only after "
                    "the program verified it)"
                )
            )
        if doc.key() in seen:
            refusals.append(
                doc.refuse(f"duplicate of document {seen[doc.key()]}: each object appears once")
            )
            continue
        seen[doc.key()] = doc.index
        refusals += [doc.refuse(reason) for reason in _check_one(doc, inv, version)]
    for group, kind, namespace, name in REQUIRED:
        if (group, kind, namespace, name) not in seen:
            where = f"{namespace}/{name}" if namespace else name
            refusals.append(
                Refusal(
                    None, kind, namespace, name, f"missing: every Kueue release has {kind} {where}"
                )
            )
    return refusals


def created_namespaces(docs: Iterable[Document]) -> frozenset[str]:
    return frozenset(d.name for d in docs if d.group == "" and d.kind == "Namespace")


def find(
    objects: Sequence[dict[str, Any]], group: str, kind: str, namespace: str | None, name: str
) -> dict[str, Any] | None:
    """The one object with this API group, kind, namespace and name (never a look-alike)."""
    for obj in objects:
        meta = _map(obj.get("metadata"))
        if (
            group_of(str(obj.get("apiVersion"))) == group
            and obj.get("kind") == kind
            and (meta.get("namespace") or None) == namespace
            and meta.get("name") == name
        ):
            return obj
    return None
