"""The admission check rules on hand-written objects in the shape Kueue v1beta2 documents: what
the AdmissionCheck CRD refuses (controllerName at most 253 characters; parameters with an API
group, a kind and a name, each well formed), what the MultiKueue controller cannot load (its
parameters must name a kueue.x-k8s.io MultiKueueConfig, else BadConfig), where Kueue allows a
MultiKueue check on a ClusterQueue (one per queue, never per flavor), and the project's rules
that what a queue or check names exists. Each case pins the whole error: where, the message,
the fix and the rule's code."""

from __future__ import annotations

from typing import Any

import pytest

from gpu_queues.kueue.admissioncheck import (
    admission_check_errors,
    admission_check_names,
    missing_multikueue_config,
    multikueue_check_placement,
    undeclared_admission_checks,
)
from gpu_queues.kueue.errors import UNKNOWN, FieldError
from tests.builders import ClusterQueue

pytestmark = pytest.mark.unit

MK = "kueue.x-k8s.io/multikueue"
CHECKS = "spec.admissionChecksStrategy.admissionChecks"
PARAMS_FIX = "set parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: ...}"
BAD_CONFIG = (
    "spec.parameters",
    "a MultiKueue admission check needs parameters naming a MultiKueueConfig "
    "(apiGroup kueue.x-k8s.io); without them Kueue keeps it inactive (BadConfig)",
    PARAMS_FIX,
    "check-parameters",
)


def found(errors: list[FieldError]) -> list[tuple[str, str, str, str]]:
    return [(e.where, e.message, e.fix, e.code) for e in errors]


def queue(*checks: Any) -> dict[str, Any]:
    """A ClusterQueue with these checks (and no quota: the checks' rules look at no more)."""
    return ClusterQueue("ml").spec(admissionChecksStrategy={"admissionChecks": list(checks)}).obj()


def check(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": "multikueue-ml"},
        "spec": spec,
    }


def params(**given: Any) -> dict[str, Any]:
    base = {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "ml"}
    return {k: v for k, v in {**base, **given}.items() if v is not ...}


# --- the checks a ClusterQueue names -----------------------------------------------------------


def test_the_names_of_a_queues_checks_leave_out_unset_and_unknown_ones() -> None:
    cq = queue({"name": "a"}, {"name": ""}, {"name": UNKNOWN}, {}, "b", {"name": "c"})
    assert admission_check_names(cq) == ["a", "c"]
    assert admission_check_names({"spec": {}}) == []


def test_a_check_a_queue_names_but_nobody_declared_is_reported_where_it_is_named() -> None:
    cq = queue({"name": "ok"}, {"name": "gone"}, {"name": UNKNOWN}, {"name": ""})
    assert found(undeclared_admission_checks(cq, {"ok", "b-other", "a-other"})) == [
        (
            f"{CHECKS}[1].name",
            "admission check 'gone' is not declared (declared: a-other, b-other, ok), so Kueue "
            "would mark the queue inactive (AdmissionCheckNotFound) and admit nothing",
            "declare the AdmissionCheck, or fix the name",
            "check-undeclared",
        )
    ]
    assert undeclared_admission_checks(cq, {"ok", "gone"}) == []
    assert found(undeclared_admission_checks(queue({"name": "x"}), set()))[0][1].startswith(
        "admission check 'x' is not declared (declared: none)"
    )


def test_two_multikueue_checks_on_one_queue_make_it_inactive() -> None:
    cq = queue({"name": "mk-a"}, {"name": "prov"}, {"name": "mk-b"})
    assert found(multikueue_check_placement(cq, {"mk-a", "mk-b"})) == [
        (
            CHECKS,
            "it lists 2 MultiKueue admission checks (mk-a, mk-b); Kueue allows one and would "
            "mark the queue inactive",
            "keep one MultiKueue admission check; put every worker in its MultiKueueConfig",
            "multikueue-checks",
        )
    ]
    assert multikueue_check_placement(cq, {"mk-a"}) == []
    assert multikueue_check_placement(cq, {"prov"}) == []


def test_a_multikueue_check_limited_to_flavors_makes_the_queue_inactive() -> None:
    cq = queue({"name": "prov", "onFlavors": ["gpu"]}, {"name": "mk", "onFlavors": ["a", "b"]})
    assert found(multikueue_check_placement(cq, {"mk"})) == [
        (
            f"{CHECKS}[1].onFlavors",
            "MultiKueue admission check 'mk' is limited to flavors a, b; Kueue runs MultiKueue "
            "for a whole queue only and would mark it inactive",
            "remove onFlavors from the MultiKueue admission check",
            "multikueue-checks",
        )
    ]
    whole: Any
    for whole in ([], None, UNKNOWN):
        assert multikueue_check_placement(queue({"name": "mk", "onFlavors": whole}), {"mk"}) == []


# --- the AdmissionCheck --------------------------------------------------------------------------


def test_a_multikueue_check_naming_a_multikueue_config_passes() -> None:
    assert admission_check_errors(check({"controllerName": MK, "parameters": params()})) == []
    assert admission_check_errors(check(UNKNOWN)) == []
    # Another controller's parameters may name any kind of any group.
    other = {"apiGroup": "example.com", "kind": "ProvisioningRequestConfig", "name": "x"}
    assert admission_check_errors(check({"controllerName": "x.io/y", "parameters": other})) == []
    assert admission_check_errors(check({"controllerName": "x.io/y"})) == []


@pytest.mark.parametrize(
    ("controller", "message"),
    [(None, "controllerName is not set"), ("", "controllerName is not set")],
)
def test_a_check_without_a_controller_is_refused(controller: Any, message: str) -> None:
    spec = {"controllerName": controller} if controller is not None else {}
    assert found(admission_check_errors(check(spec))) == [
        ("spec.controllerName", message, "set controllerName", "controller-name")
    ]


def test_a_controller_name_is_at_most_253_characters() -> None:
    assert admission_check_errors(check({"controllerName": "c" * 253})) == []
    assert found(admission_check_errors(check({"controllerName": "c" * 254}))) == [
        (
            "spec.controllerName",
            "controllerName has 254 characters",
            "keep it to at most 253",
            "controller-name",
        )
    ]


def test_malformed_parameters_are_refused_field_by_field() -> None:
    bad = {"apiGroup": "Not_A.Group", "kind": "9Kind", "name": "Not-A-Label"}
    spec = {"controllerName": "x.io/y", "parameters": bad}
    assert found(admission_check_errors(check(spec))) == [
        (
            "spec.parameters.apiGroup",
            "apiGroup 'Not_A.Group' is not an API group",
            "write a DNS subdomain",
            "check-parameters",
        ),
        (
            "spec.parameters.kind",
            "kind '9Kind' is not a kind",
            "write a kind such as MultiKueueConfig",
            "check-parameters",
        ),
        (
            "spec.parameters.name",
            "parameters name 'Not-A-Label' is not a DNS label of at most 63 characters",
            "use a shorter name of lowercase letters, digits and '-'",
            "check-parameters",
        ),
    ]


def test_a_kind_is_at_most_63_characters_and_a_name_a_dns_label() -> None:
    def errors(**given: Any) -> list[str]:
        spec = {"controllerName": "x.io/y", "parameters": params(**given)}
        return [e.where for e in admission_check_errors(check(spec))]

    assert errors(kind="K" * 63, name="n" * 63) == []
    assert errors(kind="K" * 64) == ["spec.parameters.kind"]
    assert errors(kind="Kind-") == ["spec.parameters.kind"]
    assert errors(kind="k-9") == []
    assert errors(name="n" * 64) == ["spec.parameters.name"]
    assert errors(name="a.b") == ["spec.parameters.name"]
    assert errors(apiGroup="a.b-c.io") == []
    assert errors(apiGroup="a" * 254) == ["spec.parameters.apiGroup"]


@pytest.mark.parametrize("key", ["apiGroup", "kind", "name"])
def test_every_part_of_the_parameters_must_be_set(key: str) -> None:
    spec = {"controllerName": "x.io/y", "parameters": params(**{key: ...})}
    assert found(admission_check_errors(check(spec))) == [
        (f"spec.parameters.{key}", f"parameters.{key} is not set", "set it", "check-parameters")
    ]


def test_unknown_parameters_are_left_to_the_update() -> None:
    for given in (UNKNOWN, {"apiGroup": UNKNOWN, "kind": UNKNOWN, "name": UNKNOWN}):
        assert admission_check_errors(check({"controllerName": MK, "parameters": given})) == []
    mixed = {"apiGroup": UNKNOWN, "kind": "Other", "name": "x"}
    assert admission_check_errors(check({"controllerName": MK, "parameters": mixed})) == []
    mixed = {"apiGroup": "example.com", "kind": UNKNOWN, "name": "x"}
    assert admission_check_errors(check({"controllerName": MK, "parameters": mixed})) == []


@pytest.mark.parametrize(
    "given",
    [
        None,
        {"apiGroup": "example.com", "kind": "MultiKueueConfig", "name": "ml"},
        {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "ml"},
    ],
)
def test_a_multikueue_check_without_a_multikueue_config_is_bad_config(given: Any) -> None:
    spec = {"controllerName": MK} if given is None else {"controllerName": MK, "parameters": given}
    assert found(admission_check_errors(check(spec))) == [BAD_CONFIG]


def test_the_multikueue_config_a_check_names_must_be_declared() -> None:
    ac = check({"controllerName": MK, "parameters": params(name="ml")})
    assert missing_multikueue_config(ac, {"ml"}) == []
    assert found(missing_multikueue_config(ac, {"west", "east"})) == [
        (
            "spec.parameters.name",
            "MultiKueueConfig 'ml' is not declared (declared: east, west), so Kueue keeps the "
            "admission check inactive and its queues admit nothing",
            "declare the MultiKueueConfig, or fix the name",
            "multikueue-reference",
        )
    ]
    other = check({"controllerName": "x.io/y", "parameters": params(name="ml")})
    assert missing_multikueue_config(other, set()) == []
    for name in ("", UNKNOWN, None):
        given = check({"controllerName": MK, "parameters": {"name": name}})
        assert missing_multikueue_config(given, set()) == []


def test_every_multikueue_check_limited_to_flavors_is_reported_after_a_whole_queue_one() -> None:
    cq = queue({"name": "mk-a"}, {"name": "mk-b", "onFlavors": ["gpu"]})
    assert [e.where for e in multikueue_check_placement(cq, {"mk-a", "mk-b"})] == [
        CHECKS,
        f"{CHECKS}[1].onFlavors",
    ]
