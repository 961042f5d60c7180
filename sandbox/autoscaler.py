"""The API a cloud's cluster autoscaler serves for capacity on demand: ProvisioningRequests
(autoscaling.x-k8s.io/v1), which Kueue's provisioning admission check creates and reads.

Kueue runs its provisioning controller only if the API server serves this API when Kueue
starts, so the simulated cloud installs the CRD before Kueue whenever the stack that shapes
it has provisioning checks (sandbox/shape.py). The schema is ours, written from the API's
Go types (k8s.io/autoscaler/cluster-autoscaler/apis, provisioningrequest v1: spec podSets,
provisioningClassName, parameters; status conditions, provisioningClassDetails), not copied
from the autoscaler's generated CRD. Nothing answers the requests here: on the sandbox a
test plays the autoscaler (tests/e2e/test_capacity_on_demand.py).
"""

from __future__ import annotations

from typing import Any, Final

GROUP: Final = "autoscaling.x-k8s.io"
VERSION: Final = "v1"
PLURAL: Final = "provisioningrequests"
KIND: Final = "ProvisioningRequest"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

_STRING: Final = {"type": "string"}
_STRING_MAP: Final = {"type": "object", "additionalProperties": {"type": "string"}}

# metav1.Condition, as every status condition list in Kubernetes.
_CONDITION: Final = {
    "type": "object",
    "required": ["type", "status", "lastTransitionTime", "reason", "message"],
    "properties": {
        "type": {"type": "string", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "reason": {"type": "string", "maxLength": 1024},
        "message": {"type": "string", "maxLength": 32768},
    },
}

_SCHEMA: Final = {
    "type": "object",
    "required": ["spec"],
    "properties": {
        "apiVersion": _STRING,
        "kind": _STRING,
        "metadata": {"type": "object"},
        "spec": {
            "type": "object",
            "required": ["podSets", "provisioningClassName"],
            "properties": {
                "podSets": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": 32,
                    "items": {
                        "type": "object",
                        "required": ["podTemplateRef", "count"],
                        "properties": {
                            "podTemplateRef": {
                                "type": "object",
                                "properties": {"name": {"type": "string", "maxLength": 253}},
                            },
                            "count": {"type": "integer", "format": "int32", "minimum": 1},
                        },
                    },
                },
                "provisioningClassName": {"type": "string", "maxLength": 253},
                "parameters": _STRING_MAP,
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "conditions": {
                    "type": "array",
                    "items": _CONDITION,
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                },
                "provisioningClassDetails": _STRING_MAP,
            },
        },
    },
}


def provisioning_request_crd() -> dict[str, Any]:
    """The ProvisioningRequest CRD: namespaced, v1 served and stored, status a subresource
    (Kueue reads the status the autoscaler writes)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME, "labels": {"gpu-queues.dev/sandbox": "autoscaler"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": "provisioningrequest",
                "shortNames": ["provreq", "provreqs"],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": _SCHEMA},
                }
            ],
        },
    }
