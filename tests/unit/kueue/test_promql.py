"""Every query of the generated dashboards is PromQL that Prometheus would accept: parsed and
type-checked by promql-parser (a port of Prometheus' own parser: its grammar and its type
checks, such as rate() of a range vector only), with Grafana's $__rate_interval replaced by a
duration as Grafana does before sending a query. Broken queries are fed too, so this test can
fail. And label values of any text stay literals."""

from __future__ import annotations

import re
from typing import Any

import promql_parser
import pytest

from gpu_queues.config.dashboard import dashboard
from gpu_queues.config.model import load_config
from gpu_queues.config.schema import EXAMPLES
from gpu_queues.config.stackfile import ROOT, parse_config
from gpu_queues.kueue import promql
from tests.conftest import stack_raw

pytestmark = pytest.mark.unit


def as_grafana_sends(expr: str) -> str:
    return expr.replace(promql.RATE_WINDOW, "2m")


def boards() -> dict[str, dict[str, Any]]:
    found = {}
    for stack in ("dev", "prod", "local"):
        raw = stack_raw(stack)
        raw["kueue"] = {**raw.get("kueue", {}), "metrics": {"dashboard": {"enabled": True}}}
        found[stack] = dashboard(load_config(raw))
    (_, _, path), *_ = EXAMPLES
    found["example"] = dashboard(load_config(parse_config(path.read_text(), path.name)))
    org = ROOT / "docs" / "examples" / "organisation" / "Pulumi.org.yaml"  # a cohort tree
    found["org"] = dashboard(load_config(parse_config(org.read_text(), org.name)))
    return found


def queries() -> list[tuple[str, str]]:
    return [
        (f"{name}: {panel['title']}", t["expr"])
        for name, board in boards().items()
        for panel in board["panels"]
        for t in panel.get("targets", [])
    ]


def test_every_dashboard_query_parses_as_promql() -> None:
    found = queries()
    assert len(found) > 40
    for where, expr in found:
        try:
            promql_parser.parse(as_grafana_sends(expr))
        except Exception as exc:  # the parser's own error, with what it expected
            pytest.fail(f"{where}: {exc}\n{expr}")


@pytest.mark.parametrize(
    ("expr", "words"),
    [
        (
            f"rate({promql.select(promql.PENDING, cluster_queue='a')})",
            "expected type matrix in call to function 'rate', got vector",
        ),
        (f"sum({promql.select(promql.USAGE)}", "unclosed left parenthesis"),
        (
            f'histogram_quantile("0.5", {promql.select(promql.ADMISSION_WAIT)})',
            "expected type scalar in call to function 'histogram_quantile', got string",
        ),
    ],
)
def test_the_parser_refuses_broken_queries(expr: str, words: str) -> None:
    with pytest.raises(ValueError, match=re.escape(words)):
        promql_parser.parse(expr)


@pytest.mark.parametrize(
    "value", ['a"b', "back\\slash", "new\nline", "{}[]()", 'x"} or vector(1) #']
)
def test_a_label_value_stays_a_literal(value: str) -> None:
    parsed = promql_parser.parse(
        promql.select(promql.PENDING, cluster_queue=value, status_not=value)
    )
    assert parsed.name == promql.PENDING
    matchers = [(m.name, m.value) for m in parsed.matchers.matchers]
    assert matchers == [("cluster_queue", value), ("status", value)]
    assert str(parsed.matchers).count("!=") == 1
