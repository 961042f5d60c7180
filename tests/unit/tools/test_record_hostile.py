"""`gpuq record` against an API endpoint that sends what a real API server would refuse
(issue 42, class 1): record is pointed at clusters, kubeconfigs and proxies the user does not
control, so it holds on its own. A namespace or name that is not Kubernetes' is one line on
stderr and the rest is recorded; no file lands outside OUT (no `../`, no link out); nothing
read becomes a line or a document of the mix; no API path is built from a bad name."""

from __future__ import annotations

import os
import threading
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_queues.tools import record
from tests.unit.tools.test_record import (
    KUEUE,
    NOW_S,
    FakeRest,
    cluster,
    docs,
    job,
    recorded,
    workload,
)

pytestmark = pytest.mark.unit

AT = "2026-12-01T10:00:00Z"
FORGED = "x\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: forged, namespace: alpha}"


def finished(name: str, namespace: str, uid: str) -> dict[str, Any]:
    return workload(name, namespace, AT, uid, admitted=AT, finished="2026-12-01T10:10:00Z")


def with_namespace(rest: FakeRest, namespace: str, jobs: list[dict[str, Any]]) -> FakeRest:
    """The endpoint also lists a LocalQueue of alpha's ClusterQueue in `namespace`, and its
    Jobs, as a hostile endpoint would to make the Workloads there this recording's."""
    queues = rest.objects[f"{KUEUE}/localqueues"]["items"]
    queues.append({"metadata": {"namespace": namespace, "name": "jobs"},
                   "spec": {"clusterQueue": "alpha-cq"}})  # fmt: skip
    rest.objects[f"/apis/batch/v1/namespaces/{namespace}/jobs"] = {"items": jobs}
    return rest


def hostile_namespace(namespace: str) -> FakeRest:
    bad = finished("evil", namespace, "e1")
    bad["metadata"]["name"] = "job-evil-abcde"
    rest = cluster([finished("ok", "alpha", "g1"), bad], [job("ok", "alpha", AT, "g1")])
    return with_namespace(rest, namespace, [job("evil", namespace, AT, "e1")])


@pytest.mark.parametrize(
    "namespace",
    ["../victim", "../../victim", "/tmp/victim", "a/b", "Alpha", "x" * 64, "a\nb", ".."],
    ids=["dotdot", "dotdot-twice", "absolute", "slash", "upper", "too-long", "newline", "dots"],
)
def test_a_namespace_that_is_not_one_is_refused_and_writes_nowhere(
    tmp_path: Path, namespace: str
) -> None:
    project = tmp_path / "project"
    out = project / "mix"
    project.mkdir()
    stack = project / "victim.yaml"
    stack.write_text("config: {}\n")
    rest = hostile_namespace(namespace)
    rec = recorded(rest)
    refused = [i for i in rec.items if i.skipped]
    assert len(refused) == 1 and "is not a namespace (a DNS-1123 label" in str(refused[0].skipped)
    written = record.write(rec, out)
    assert [p.name for p in written] == ["alpha.yaml"]
    assert sorted(p.name for p in out.iterdir()) == ["alpha.yaml"]
    assert stack.read_text() == "config: {}\n"
    assert sorted(p.name for p in project.iterdir()) == ["mix", "victim.yaml"]
    assert not (tmp_path / "victim.yaml").exists()
    # the refused namespace named no API path either
    assert all(namespace not in path for _, path in rest.requests)


def test_names_with_line_breaks_never_become_lines_or_documents() -> None:
    """A Workload with no queue is a comment in its namespace's file: its name, had it line
    breaks, would add a document of the endpoint's choosing (and a Job name, a line)."""
    no_queue = finished("x", "alpha", "n1")
    no_queue["metadata"]["name"] = FORGED
    no_queue["spec"].pop("queueName")
    bad_name = finished("y", "alpha", "n2")
    bad_name["metadata"]["name"] = "job-y\n# injected: true"
    rest = cluster([finished("ok", "alpha", "g1"), no_queue, bad_name],
                   [job("ok", "alpha", AT, "g1"), job("y", "alpha", AT, "n2")])  # fmt: skip
    for single in (True, False):
        text = next(iter(record.Recording.files(recorded(rest), single).values()))
        assert [d["metadata"]["name"] for d in docs(text)] == ["ok"]
        assert "forged" not in "".join(line for line in text.splitlines() if line[:1] != "#")
        assert "\n# injected" not in text
        assert text.isascii()
        comments = [line for line in text.splitlines() if "not recorded" in line]
        assert len(comments) == 2, comments
        assert all(line.startswith("# not recorded: Workload alpha/") for line in comments)


def wl_with(change: Any) -> dict[str, Any]:
    wl = finished("ok", "alpha", "g1")
    change(wl)
    return wl


def _container(wl: dict[str, Any]) -> dict[str, Any]:
    return wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]


BAD_FIELDS = {
    "job-name-dotdot": (
        lambda wl: wl["metadata"]["ownerReferences"][0].update(name="../../x"),
        "its Job's name '../../x' is not a Job name",
    ),
    "job-name-newline": (
        lambda wl: wl["metadata"]["ownerReferences"][0].update(name="ok\n---"),
        "its Job's name 'ok\\n---' is not a Job name",
    ),
    "job-name-64": (
        lambda wl: wl["metadata"]["ownerReferences"][0].update(name="j" * 64),
        "is not a Job name (a DNS-1123 subdomain of at most 63",
    ),
    "priority": (
        lambda wl: wl["spec"].update(
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high\n---\nkind: Job",
            }
        ),
        "its priority class 'high\\n---\\nkind: Job' is not a name usable as a label value",
    ),
    "priority-too-long": (
        lambda wl: wl["spec"].update(
            priorityClassRef={
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "p" * 64,
            }
        ),
        "is not a name usable as a label value",
    ),
    "container": (
        lambda wl: _container(wl).update(name="Main Container"),
        "a container's name 'Main Container' is not a container name",
    ),
    "resource": (
        lambda wl: _container(wl)["resources"]["requests"].update({"gpu\nx: 1": "1"}),
        "container main's resource 'gpu\\nx: 1' is not a qualified name",
    ),
    "quantity": (
        lambda wl: _container(wl)["resources"]["requests"].update(cpu="4\n---"),
        "container main's resource quantity:",
    ),
    "node-selector-key": (
        lambda wl: wl["spec"]["podSets"][0]["template"]["spec"].update(nodeSelector={"a b": "c"}),
        "a node selector key 'a b' is not a qualified name",
    ),
    "node-selector-value": (
        lambda wl: wl["spec"]["podSets"][0]["template"]["spec"].update(
            nodeSelector={"zone": "a\nb"}
        ),
        "a node selector value 'a\\nb' is not a label value",
    ),
}


@pytest.mark.parametrize("field", list(BAD_FIELDS), ids=list(BAD_FIELDS))
def test_every_name_written_is_checked_and_the_rest_is_recorded(field: str) -> None:
    change, why = BAD_FIELDS[field]
    rest = cluster(
        [finished("good", "alpha", "g0"), wl_with(change)],
        [job("good", "alpha", AT, "g0"), job("ok", "alpha", AT, "g1")],
    )
    rest.objects["/apis/batch/v1/namespaces/alpha/jobs"]["items"].append(
        {**job("j" * 64, "alpha", AT, "g1")}
    )
    rec = recorded(rest)
    assert [i.name for i in rec.items if i.manifest is not None] == ["good"]
    [refused] = [i for i in rec.items if i.skipped]
    assert why in str(refused.skipped), refused.skipped
    assert "\n" not in str(refused.skipped)
    text = rec.files(single=True)[""]
    assert [d["metadata"]["name"] for d in docs(text)] == ["good"]
    assert all("/.." not in path and "\n" not in path for _, path in rest.requests)


def test_a_link_in_out_that_leads_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("mine\n")
    out = tmp_path / "mix"
    out.mkdir()
    (out / "alpha.yaml").symlink_to(outside)
    rec = recorded(cluster([finished("ok", "alpha", "g1")], [job("ok", "alpha", AT, "g1")]))
    with pytest.raises(record.RecordError, match=r"alpha\.yaml \(a link to .*outside\.yaml\) is "
                       r"outside the recording's folder"):  # fmt: skip
        record.write(rec, out)
    assert outside.read_text() == "mine\n"
    # one file: a link out of its folder is refused the same way
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "day.yaml").symlink_to(outside)
    with pytest.raises(record.RecordError, match="outside the recording's folder"):
        record.write(rec, tmp_path / "one" / "day.yaml")
    assert outside.read_text() == "mine\n"


def test_a_fifo_in_out_is_refused_not_read(tmp_path: Path) -> None:
    """Reading a FIFO waits for a writer for ever: it is not a recording's file."""
    out = tmp_path / "mix"
    out.mkdir()
    os.mkfifo(out / "pipe.yaml")
    rec = recorded(cluster([finished("ok", "alpha", "g1")], [job("ok", "alpha", AT, "g1")]))
    errors: list[BaseException] = []

    def run() -> None:
        try:
            record.write(rec, out)
        except record.RecordError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():  # unblock the reader so the test process can end
        with open(out / "pipe.yaml", "w"):
            pass
        thread.join(5)
        pytest.fail("record.write hung on a FIFO in OUT")
    assert errors and "pipe.yaml is a manifest this tool did not write" in str(errors[0])
    # a FIFO where the recording's own file goes is refused too, before anything is written
    os.unlink(out / "pipe.yaml")
    os.mkfifo(out / "alpha.yaml")
    errors.clear()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(5)
    if thread.is_alive():
        with open(out / "alpha.yaml") as unblock:
            unblock.read()
        thread.join(5)
        pytest.fail("record.write hung writing into a FIFO in OUT")
    assert errors and "alpha.yaml is not a regular file" in str(errors[0])


class Frozen(datetime):
    """The recording's clock at the test cluster's noon."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> Frozen:  # type: ignore[override]
        return cls.fromtimestamp(NOW_S, tz)


def test_the_cli_says_one_line_per_refused_object_and_records_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rest = hostile_namespace("../victim\nrecord: 0 workloads")
    no_queue = finished("x", "alpha", "n1")
    no_queue["metadata"]["name"] = FORGED
    no_queue["spec"].pop("queueName")
    rest.objects[f"{KUEUE}/workloads"]["items"].append(no_queue)
    monkeypatch.setattr(record, "connect", lambda *_: (rest, "a\nhostile source", None))
    monkeypatch.setattr(record, "datetime", Frozen)
    assert record.main(["--out", str(tmp_path / "mix")]) == 0
    err = capsys.readouterr().err.splitlines()
    refused = [line for line in err if line.startswith("record: not recorded: ")]
    assert len(refused) == 2, err
    assert len(err) == 3, err  # and the summary
    assert err[-1].startswith("record: 1 workloads created within 24h from a")
    assert sorted(p.name for p in (tmp_path / "mix").iterdir()) == ["alpha.yaml"]
    text = (tmp_path / "mix" / "alpha.yaml").read_text()
    assert text.isascii()
    assert [d["metadata"]["name"] for d in yaml.safe_load_all(text) if d] == ["ok"]
