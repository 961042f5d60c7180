"""Kubernetes quantity parsing (gpu_queues.kueue.quantity), as the API server reads quotas."""

import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_queues.kueue.quantity import (
    QuantityError,
    format_number,
    format_quantity,
    parse_quantity,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("64", 64),
        ("+64", 64),
        ("-1", -1),
        ("500m", Fraction(1, 2)),
        ("12000m", 12),
        ("1.5", Fraction(3, 2)),
        ("1.", 1),
        (".5", Fraction(1, 2)),
        ("100n", Fraction(1, 10**7)),
        ("3u", Fraction(3, 10**6)),
        ("1k", 1000),
        ("1M", 10**6),
        ("2G", 2 * 10**9),
        ("1T", 10**12),
        ("1P", 10**15),
        ("1E", 10**18),
        ("1Ki", 1024),
        ("512Mi", 512 * 2**20),
        ("512Gi", 512 * 2**30),
        ("1.5Gi", 3 * 2**29),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("1.5e+2", 150),
        ("-2Gi", -2 * 2**30),
    ],
)
def test_valid_quantities_parse_exactly(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " 1",
        "1 ",
        "Gi",
        "1gi",
        "1KI",
        "1K",
        "1.2.3",
        "1e",
        "1e1.5",
        "1Gi1",
        "--1",
        "latest",
        "1 Gi",
        "0x10",
        "64\n",
    ],
)
def test_malformed_quantities_are_rejected(text):
    # refused, naming the value and a few that would do
    expected = f"{text!r} is not a quantity (expected e.g. 64, 500m, 512Gi, 1.5G, 1e3)"
    with pytest.raises(QuantityError, match=f"^{re.escape(expected)}$"):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("number", "expected"), [(8, 8), (8.0, 8), (0.5, Fraction(1, 2)), (0.1, Fraction(1, 10))]
)
def test_json_numbers_parse_as_written(number, expected):
    # Numbers reach policies as floats after the engine's protobuf round trip.
    assert parse_quantity(number) == expected


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (True, "True is a boolean, not a quantity"),
        (None, "None is a NoneType, not a quantity"),
        ([1], "[1] is a list, not a quantity"),
        ({"a": 1}, "{'a': 1} is a dict, not a quantity"),
        (float("nan"), "nan is not a finite number"),
        (float("inf"), "inf is not a finite number"),
    ],
)
def test_non_quantities_are_rejected(value, says):
    with pytest.raises(QuantityError, match=f"^{re.escape(says)}$"):
        parse_quantity(value)


_SUFFIXES = {
    "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "m": Fraction(1, 1000),
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
}  # fmt: skip


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(sorted(_SUFFIXES)))
def test_suffix_multiplies_the_number(number, suffix):
    assert parse_quantity(f"{number}{suffix}") == number * _SUFFIXES[suffix]


@given(st.integers(min_value=-(10**6), max_value=10**6), st.integers(min_value=-6, max_value=6))
def test_exponent_scales_by_powers_of_ten(number, exponent):
    assert parse_quantity(f"{number}e{exponent}") == number * Fraction(10) ** exponent


# Every quantity in [0, 10**6] with at most milli precision, drawn directly (a filter on
# st.fractions threw most draws away: a second per run), whole numbers more often.
@given(
    st.one_of(
        st.integers(min_value=0, max_value=10**6).map(Fraction),
        st.integers(min_value=0, max_value=10**9).map(lambda n: Fraction(n, 1000)),
    )
)
def test_format_round_trips(value):
    assert parse_quantity(format_quantity(value)) == value


def test_format_is_short():
    assert format_quantity(Fraction(512 * 2**30)) == "512Gi"
    assert format_quantity(Fraction(8)) == "8"
    assert format_quantity(Fraction(1, 2)) == "500m"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (Fraction(0), "0"),  # not "0Gi"
        (Fraction(2**30), "1Gi"),
        (Fraction(3 * 2**30), "3Gi"),
        (Fraction(2**30 + 1), "1073741825"),
        (Fraction(1, 1000), "1m"),
        (Fraction(1, 3), "0.3333333333333333"),  # neither whole nor milli: a decimal
    ],
)
def test_format_cases_found_by_mutation_testing(value, shown):
    # make mutation (mutmut) left these unpinned: zero, single and odd Gi, non-milli values.
    assert format_quantity(value) == shown


@pytest.mark.parametrize(
    ("value", "shown"), [(Fraction(8), "8"), (Fraction(-3), "-3"), (Fraction(1, 2), "0.5")]
)
def test_format_number_for_messages(value, shown):
    assert format_number(value) == shown


# --- why not kubernetes.utils.parse_quantity (issue 10, item 13b) -------------------------
#
# The kubernetes client in the venv ships a parser, but it accepts quantities the API server
# refuses. What the API server says comes from k8s.io/apimachinery v0.36.1 (the version
# Kueue v0.18.3 builds with), resource.ParseQuantity: its regular expression
# ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$ and suffix table (decimal n u m "" k M G T P E,
# binary Ki..Ei), and quantity_test.go's invalid list (" 1" and "1 ": "trailing whitespace is
# forbidden"). A quantity in JSON is a string or a number, never a boolean. Each row was
# also run through ParseQuantity itself; the API server's answer is in the last column.
_CLIENT_ACCEPTS_SERVER_REFUSES = [
    # input, what kubernetes.utils.parse_quantity returns, the API server's error
    (" 1", "1", "quantities must match the regular expression"),
    ("1 ", "1", "quantities must match the regular expression"),
    ("1K", "1000", "unable to parse quantity's suffix (kilo is a lowercase k)"),
    ("1_000", "1000", "quantities must match the regular expression"),
    ("inf", "Infinity", "quantities must match the regular expression"),
    ("NaN", "NaN", "quantities must match the regular expression"),
    (True, "1", "a boolean is not a quantity"),
]


@pytest.mark.parametrize(("text", "client", "server"), _CLIENT_ACCEPTS_SERVER_REFUSES)
def test_the_kubernetes_clients_parser_accepts_what_the_api_server_refuses(text, client, server):
    from kubernetes.utils import parse_quantity as client_parse

    assert str(client_parse(text)) == client  # the client: a value
    with pytest.raises(QuantityError, match=f"^{re.escape(repr(text))} is "):  # ours: refused
        parse_quantity(text)


def test_where_ours_is_stricter_or_more_exact_than_the_api_server():
    # "-" and "+" alone parse as 0 in ParseQuantity (its zero-stripping loop runs off the end);
    # no one means zero by them, so ours refuses them.
    for text in ("-", "+"):
        with pytest.raises(QuantityError, match=f"^'{re.escape(text)}' is not a quantity"):
            parse_quantity(text)
    # ParseQuantity rounds sub-nano values up to 1n and caps binary-SI values at 2^63-1; ours
    # keeps the exact value, which only matters for quotas no one writes.
    assert parse_quantity("0.5n") == Fraction(1, 2 * 10**9)
    assert parse_quantity("9Ei") == 9 * 2**60


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("1e3000000", "exponent 3000000 is out of range"),
        ("1e30000000", "exponent 30000000 is out of range"),
        ("1e-65", "exponent -65 is out of range"),
        ("9" * 5000, "(5000 characters) is too long"),
        ("1" + "0" * 80, "(81 characters) is too long"),
        ("99999999999999999999999999999999999999999999999999999999999999999E", "too long"),
        ("9" * 62 + "Ei", "too large"),
        (10**90, "too large"),
        (-(10**81), "too large"),
        (1e300, "too large"),
    ],
)
def test_quantities_beyond_any_hardware_are_refused_fast_as_quantity_errors(value, says):
    """Bounded so that a stack file cannot stall a preview: "1e30000000" (ten characters)
    took 39 s to parse, and a 5,000-digit one escaped as a plain ValueError."""
    with pytest.raises(QuantityError, match=re.escape(says)):
        parse_quantity(value)


def test_the_bounds_leave_every_real_quantity_alone():
    assert parse_quantity("1e64") == Fraction(10) ** 64
    assert parse_quantity("1e-64") == Fraction(1, 10**64)
    assert parse_quantity(10**79) == 10**79
    assert parse_quantity("16Ei") == 16 * 2**60
    assert parse_quantity("1" + "0" * 63) == 10**63  # 64 characters: the longest allowed
    assert format_quantity(parse_quantity("1e-64")) == "1e-64"


def test_a_huge_quota_in_a_stack_file_is_a_config_error_naming_the_key(dev_raw):
    from gpu_queues.config.model import ConfigError, load_config

    resources = dev_raw["teams"][0]["resourceGroups"][0]["flavors"][0]["resources"]
    resources["nvidia.com/gpu"]["nominalQuota"] = "1e30000000"
    with pytest.raises(ConfigError) as raised:
        load_config(dev_raw)
    assert "nominalQuota" in str(raised.value)
    assert "must be a Kubernetes quantity such as 64" in str(raised.value)
    assert "got '1e30000000'" in str(raised.value)


# --- the capacity annotation and the quota sum (gpu_queues.kueue.capacity) ----------------
# Exact values worked out by hand; `make mutation` found these functions barely pinned.


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (Fraction(0), "0"),
        (Fraction(8), "8"),
        (Fraction(1023), "1023"),
        (Fraction(2**10), "1Ki"),
        (Fraction(3 * 2**20), "3Mi"),
        (Fraction(512 * 2**30), "512Gi"),
        (Fraction(8 * 2**40), "8Ti"),
        (Fraction(2**50), "1Pi"),
        (Fraction(2 * 2**60), "2Ei"),
        (Fraction(2**30 + 2**20), "1025Mi"),  # the largest binary unit that divides it
        (Fraction(3, 2), "1500m"),
        (Fraction(1, 10**6), "1u"),
        (Fraction(25, 10**8), "250n"),
        (Fraction(1, 3 * 10**9), "1n"),  # finer than nano: rounded up, as the API server does
        (Fraction(1, 2 * 10**9), "1n"),
        (Fraction(1, 11**9), "1n"),
        (Fraction(1, 3), "333333334n"),
    ],
)
def test_the_capacity_annotation_writes_exact_quantities(value, written):
    from gpu_queues.kueue.capacity import encode_capacity

    assert encode_capacity({"x": value}) == f'{{"x":"{written}"}}'
    assert parse_quantity(written) >= value  # never less than the capacity it stands for


def test_the_capacity_annotation_is_sorted_and_compact():
    from gpu_queues.kueue.capacity import encode_capacity

    capacity = {"nvidia.com/gpu": Fraction(32), "cpu": Fraction(768), "memory": Fraction(8 * 2**40)}
    assert encode_capacity(capacity) == '{"cpu":"768","memory":"8Ti","nvidia.com/gpu":"32"}'
    assert encode_capacity({}) == "{}"


def _flavor(annotation: object) -> dict[str, object]:
    from gpu_queues.kueue.capacity import CAPACITY_ANNOTATION

    return {"metadata": {"name": "f", "annotations": {CAPACITY_ANNOTATION: annotation}}}


def test_a_flavor_declares_the_capacity_of_its_annotation():
    from gpu_queues.kueue.capacity import declared_capacity

    assert declared_capacity(_flavor('{"cpu":"1500m","memory":"2Gi","nvidia.com/gpu":8}')) == (
        {"cpu": Fraction(3, 2), "memory": Fraction(2 * 2**30), "nvidia.com/gpu": Fraction(8)},
        [],
    )
    assert declared_capacity({"metadata": {"name": "f"}}) == ({}, [])  # no annotation
    assert declared_capacity(_flavor(None)) == ({}, [])


@pytest.mark.parametrize(
    ("annotation", "capacity", "message"),
    [
        ("{cpu: 8}", {}, "it is not JSON: Expecting property name enclosed in double quotes"),
        ('["cpu"]', {}, "it is not a JSON object"),
        ('{"cpu":"8x","memory":"1Gi"}', {"memory": Fraction(2**30)}, "cpu: '8x' is not a quantity"),
    ],
)
def test_a_capacity_annotation_that_cannot_be_read_is_an_error_at_its_key(
    annotation, capacity, message
):
    from gpu_queues.kueue.capacity import (
        CAPACITY_ANNOTATION,
        CAPACITY_ANNOTATION_INVALID,
        declared_capacity,
    )

    found, (error,) = declared_capacity(_flavor(annotation))
    assert found == capacity
    assert error.path == ("metadata", "annotations", CAPACITY_ANNOTATION)
    assert error.message.startswith(message), error.message
    assert error.fix == "write a JSON object of resource: quantity"
    assert error.code == CAPACITY_ANNOTATION_INVALID


def _cq(kind: str, name: object, flavors: object) -> dict[str, object]:
    return {
        "kind": kind,
        "metadata": {"name": name},
        "spec": {"resourceGroups": [{"flavors": flavors}]},
    }


def test_quota_totals_sum_cluster_queues_and_cohorts_per_flavor_and_resource():
    from gpu_queues.kueue.capacity import QuotaHolder, quota_totals

    gpu = lambda n: {"name": "nvidia.com/gpu", "nominalQuota": n}  # noqa: E731
    totals = quota_totals(
        [
            _cq(
                "ClusterQueue",
                "a-cq",
                [
                    {
                        "name": "h100",
                        "resources": [gpu("6"), {"name": "cpu", "nominalQuota": "500m"}],
                    }
                ],
            ),
            _cq(
                "ClusterQueue",
                "b-cq",
                [
                    {"name": "h100", "resources": [gpu(2)]},
                    {"name": "a100", "resources": [gpu("4")]},
                ],
            ),
            _cq("Cohort", "pool", [{"name": "h100", "resources": [gpu("1")]}]),
            _cq("LocalQueue", "q", [{"name": "h100", "resources": [gpu("100")]}]),  # not quota
            _cq("ClusterQueue", "", [{"name": "a100", "resources": [gpu("1")]}]),
        ]
    )
    assert totals.total(("h100", "nvidia.com/gpu")) == 9
    assert totals.total(("a100", "nvidia.com/gpu")) == 5
    assert totals.total(("h100", "cpu")) == Fraction(1, 2)
    assert totals.total(("h100", "memory")) == 0
    assert isinstance(totals.total(("h100", "memory")), Fraction)
    assert totals.holders[("h100", "nvidia.com/gpu")] == [
        QuotaHolder("ClusterQueue", "a-cq", Fraction(6)),
        QuotaHolder("ClusterQueue", "b-cq", Fraction(2)),
        QuotaHolder("Cohort", "pool", Fraction(1)),
    ]
    assert totals.holders[("a100", "nvidia.com/gpu")][1] == QuotaHolder(
        "ClusterQueue", "<name not known yet>", Fraction(1)
    )
    assert totals.decidable(("h100", "nvidia.com/gpu"))
    assert (totals.undecidable, totals.undecidable_flavors, totals.any_flavor_unknown) == (
        set(),
        set(),
        False,
    )


def test_quota_totals_withhold_a_verdict_on_what_is_not_known():
    from gpu_queues.kueue.capacity import quota_totals
    from gpu_queues.kueue.errors import UNKNOWN as unknown  # what a preview does not know yet

    bad = {"name": "nvidia.com/gpu", "nominalQuota": "lots"}
    cpu = {"name": "cpu", "nominalQuota": "4"}
    totals = quota_totals(
        [
            _cq("ClusterQueue", "a", [{"name": "h100", "resources": [bad, cpu]}]),
            _cq(
                "ClusterQueue",
                "b",
                [{"name": "a100", "resources": unknown}, {"name": "l4", "resources": [cpu]}],
            ),
        ]
    )
    # what is known beside it is still summed
    assert (totals.total(("h100", "cpu")), totals.total(("l4", "cpu"))) == (4, 4)
    assert totals.undecidable == {("h100", "nvidia.com/gpu")}
    assert totals.undecidable_flavors == {"a100"}
    assert not totals.decidable(("h100", "nvidia.com/gpu"))
    assert not totals.decidable(("a100", "cpu"))  # the whole flavor
    assert totals.decidable(("l4", "cpu"))
    assert not totals.any_flavor_unknown
    anywhere = quota_totals(
        [
            _cq(
                "ClusterQueue",
                "c",
                [{"name": unknown, "resources": []}, {"name": "l4", "resources": [cpu]}],
            )
        ]
    )
    assert anywhere.any_flavor_unknown and not anywhere.decidable(("l4", "cpu"))
    assert anywhere.total(("l4", "cpu")) == 4


def test_a_negative_capacity_is_no_limit_to_sum_against():
    # The config property found it (a per-node resource of -1 on a resource no queue holds):
    # the check crashed on the missing holders instead of leaving it to the model's refusal.
    from gpu_queues.kueue.capacity import QuotaTotals, over_capacity

    assert over_capacity(QuotaTotals(), {("h100", "name"): Fraction(-4)}) == []
    assert over_capacity(QuotaTotals(), {("h100", "cpu"): Fraction(0)}) == []
    # and the capacities after it are still compared, a fraction of a unit as much as any
    from gpu_queues.kueue.capacity import Overrun, QuotaHolder

    one = QuotaHolder("ClusterQueue", "a-cq", Fraction(1))
    totals = QuotaTotals(holders={("l4", "cpu"): [one], ("t4", "cpu"): [one]})
    capacity = {
        ("a100", "name"): Fraction(-1),
        ("l4", "cpu"): Fraction(1, 2),
        ("t4", "cpu"): Fraction(0),  # no hardware at all: any quota is over it
    }
    assert over_capacity(totals, capacity) == [
        Overrun("l4", "cpu", Fraction(1), Fraction(1, 2), (one,)),
        Overrun("t4", "cpu", Fraction(1), Fraction(0), (one,)),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (10**80, f"{10**80} is too large for a quantity (at most 1e80)"),
        (-(10**80), f"-{10**80} is too large for a quantity (at most 1e80)"),
        (1e300, "1e+300 is too large for a quantity (at most 1e80)"),
        ("9" * 62 + "Ei", f"'{'9' * 62}Ei' is too large for a quantity (at most 1e80)"),
        ("9" * 63 + "E", f"'{'9' * 63}E' is too large for a quantity (at most 1e80)"),
        ("1" + "0" * 60 + "e20", f"'1{'0' * 60}e20' is too large for a quantity (at most 1e80)"),
        (
            "1234567890" * 7,
            "'12345678901234567890'... (70 characters) is too long for a quantity (at most 64)",
        ),
    ],
)
def test_the_bounds_messages_in_full(value, message):
    """1e80 exactly is the first value refused; the message shows the value as written."""
    with pytest.raises(QuantityError) as refused:
        parse_quantity(value)
    assert str(refused.value) == message
    assert parse_quantity(10**80 - 1) == 10**80 - 1
