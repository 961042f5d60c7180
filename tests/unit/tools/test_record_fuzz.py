"""A property over `gpuq record`'s input (issue 42): whatever strings an API endpoint puts in
a Workload and its Job (namespace, names, queue, priority, containers, resources, node
selector), recording ends in a mix or a reason, within ten seconds (a hang guard: CI's loaded
lanes stretch a plain example past one), with every file inside OUT,
every document a valid object of valid names, and every comment one line. Seeded
(derandomized) and bounded in time; the count scales with the profile (tests/properties.py)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_queues.kueue.fields import is_dns_label, is_dns_subdomain
from gpu_queues.tools import record
from tests.properties import examples
from tests.unit.tools.test_record import cluster, job, recorded
from tests.unit.tools.test_record_hostile import AT, finished, with_namespace

pytestmark = [pytest.mark.unit, pytest.mark.hypothesis]

HOSTILE = ["../x", "..", "/", "a/b", "x\n---\nkind: Job", "\r", "\x85", "\u2028", "#", "'",
           '"', "&a", "*a", "!!python/object", "{}", "[]", ": ", "- ", "\x00", "\u202e",
           ""]  # fmt: skip
STRINGS = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=70),
    st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,70}[a-z0-9])?", fullmatch=True),
    st.lists(st.sampled_from([*HOSTILE, "ok", "a", "9"]), max_size=4).map("".join),
)
FIELDS = ("namespace", "name", "owner", "queue", "priority", "container", "resource",
          "quantity", "selector-key", "selector-value")  # fmt: skip


def hostile(values: dict[str, str]) -> Any:
    """A cluster whose one Workload and Job carry `values` where each field goes."""
    ns = values.get("namespace", "alpha")
    wl = finished("ok", ns, "u1")
    meta, spec = wl["metadata"], wl["spec"]
    meta["name"] = values.get("name", meta["name"])
    meta["ownerReferences"][0]["name"] = values.get("owner", "ok")
    pod = spec["podSets"][0]["template"]["spec"]
    container = pod["containers"][0]
    if "queue" in values:
        spec["queueName"] = values["queue"]
    if "priority" in values:
        spec["priorityClassRef"] = {"group": "kueue.x-k8s.io", "name": values["priority"]}
    container["name"] = values.get("container", container["name"])
    requests = container["resources"]["requests"]
    requests[values.get("resource", "cpu")] = values.get("quantity", "1")
    pod["nodeSelector"] = {values.get("selector-key", "zone"): values.get("selector-value", "a")}
    owner = job("ok", ns, AT, "u1")
    owner["metadata"]["name"] = values.get("owner", "ok")
    rest = cluster([wl], [owner] if ns == "alpha" else [])
    if ns != "alpha":
        with_namespace(rest, ns, [owner])
    queue = values.get("queue")
    if queue is not None:  # the endpoint's LocalQueue list names it too: it is this recording's
        rest.objects[f"{record.KUEUE}/localqueues"]["items"].append(
            {"metadata": {"namespace": ns, "name": queue}, "spec": {"clusterQueue": "alpha-cq"}}
        )
    return rest


@settings(
    max_examples=examples(60),
    derandomize=True,
    deadline=10_000,  # a hang guard (the docstring), in milliseconds
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.dictionaries(st.sampled_from(FIELDS), STRINGS, max_size=4))
def test_whatever_the_endpoint_sends_the_recording_holds(values: dict[str, str]) -> None:
    rec = recorded(hostile(values))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = root / "mix"
        written = record.write(rec, out)
        assert {p.parent for p in written} <= {out}
        assert [p.name for p in root.iterdir()] == ["mix"]
        for path in written:
            assert path.resolve().is_relative_to(out.resolve())
            text = path.read_text()
            assert text.isascii() or all(
                line.isascii() for line in text.splitlines() if line[:1] == "#"
            )
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
            assert len(docs) == sum(i.manifest is not None for i in rec.items)
            for doc in docs:
                meta = doc["metadata"]
                assert is_dns_label(meta["namespace"]) and is_dns_subdomain(meta["name"]), meta
            comments = [line for line in text.splitlines() if "not recorded" in line]
            shown = [i for i in rec.items if i.skipped and i.file(False) is not None]
            assert len(comments) == len(shown), (comments, shown)
    for item in rec.items:
        assert item.manifest is not None or item.skipped
        assert "\n" not in (item.skipped or "")
