"""Reading proxied props: unknown values become UNKNOWN instead of aborting the policy."""

import pytest
from policy_harness import UNKNOWN, wire
from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE, UnknownValueError

from policies.props import UNKNOWN as MARKER
from policies.props import child, plain

pytestmark = pytest.mark.policy


def test_the_proxy_raises_on_unknowns_so_rules_must_not_read_it_directly():
    props = wire({"spec": {"clusterQueue": UNKNOWN}})
    with pytest.raises(UnknownValueError):
        _ = props["spec"]["clusterQueue"]


def test_plain_replaces_unknowns_at_any_depth():
    props = wire(
        {
            "metadata": {"name": "q"},
            "spec": {"groups": [{"n": UNKNOWN_NUMBER_VALUE}, UNKNOWN], "selector": UNKNOWN},
        }
    )
    assert plain(props) == {
        "metadata": {"name": "q"},
        "spec": {"groups": [{"n": MARKER}, MARKER], "selector": MARKER},
    }


def test_plain_keeps_numbers_as_the_engine_sends_them():
    assert plain(wire({"quota": 8})) == {"quota": 8.0}


def test_child_follows_keys_and_reports_missing_and_unknown():
    data = plain(wire({"a": {"b": UNKNOWN, "c": "x"}}))
    assert child(data, "a", "c") == "x"
    assert child(data, "a", "b") is MARKER
    assert child(data, "a", "b", "deeper") is MARKER
    assert child(data, "a", "missing") is None
    assert child(data, "a", "c", "deeper") is None
