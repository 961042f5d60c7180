"""Every reader of user or cluster text, fuzzed (issue 42): a stack file, a what-if mix, a
Kueue manifest, a kubeconfig, and the cluster's answers `gpuq record` reads. Each example is a
plausible document of its kind with hostile lines spliced in at any depth (alias bombs,
deep nesting, long integers, tags, directives, stray indicators, NUL, a byte-order mark,
bytes that are no UTF-8), or text and bytes at random.

Every input must end in a result or the reader's own error naming the input, within ten
seconds (an alias bomb or a quadratic reader takes minutes; CI's loaded lanes once took a
plain example to 1.9 s), never a traceback; and nothing may be written outside the folder
given (record's output). Hypothesis is seeded (derandomize) so a run is repeatable; the deep
suite runs ten times the examples (tests/properties.py).
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_queues import yamlio
from gpu_queues.config.model import ConfigError, KueueConfig, load_config
from gpu_queues.config.stackfile import StackFileError, read_config
from gpu_queues.kueue.client import KubeconfigError, resolve
from gpu_queues.release.manifest import ManifestError, load_manifest
from gpu_queues.tools import record
from gpu_queues.whatif.documents import MixTooLarge
from gpu_queues.whatif.mix import Catalog, TeamQueue, load_mix
from gpu_queues.whatif.workloads import Rest
from tests.properties import examples

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(
    max_examples=examples(50),
    deadline=None,  # each reader is timed below, against the hang guard (HANG)
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def _bomb(levels: int) -> str:
    parts = ["a0: &a0 [x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels)
    ]
    return "{" + ", ".join(parts) + "}"


ODD = [
    "? [a, b]\n  : c",
    "k: !!binary aGVsbG8=",
    "k: !!set {a, b}",
    "k: !!python/object:os.system x",
    "k: *undefined",
    "k: &a",
    "<<: [1, 2]",
    "k: 0x" + "f" * 200,
    "k: 1e99999",
    "k: .nan",
    "k: 2020-01-01T00:00:00Z",
    "%YAML 1.2",
    "---",
    "...",
    "k: '",
    'k: "\\u0000"',
    "k: {",
    "- - - -",
    "\t k: v",
    "k: v # comment",
    "k: |\n  line\n   more",
    "\x00",
    "\ufeffk: v",
    "k: " + "x" * 3000,
    "k: ../../../etc/passwd",
    "k: \u202e\u2066",
]

# Sizes in tiers, so that a few examples reach each bound and each side of it (hypothesis
# would otherwise draw mostly the smallest integers).
hostile_lines = st.one_of(
    st.sampled_from([2, 3, 5, 8, 12]).map(lambda n: "k: " + _bomb(n)),
    st.sampled_from([50, 98, 99, 100, 101, 999, 1001, 30_000]).map(
        lambda n: "k: " + "[" * n + "]" * n
    ),
    st.sampled_from([50, 101, 2_000]).map(
        lambda n: "k:\n" + "\n".join(" " * (i + 1) + f"k{i}:" for i in range(n))
    ),
    st.sampled_from([99, 101, 4_301, 5_000]).map(lambda n: "k: " + "9" * n),
    st.sampled_from([99, 101, 4_301, 5_000]).map(lambda n: "k: -" + "1_" * (n // 2)),
    st.sampled_from(ODD),
)


def spliced(base: str) -> st.SearchStrategy[str]:
    """`base` with up to three hostile lines, each at the indentation of the line it goes
    before, so it lands inside whatever mapping or list is there."""
    lines = base.splitlines()

    def splice(picks: list[tuple[int, str]]) -> str:
        out = list(lines)
        for at, line in sorted(picks, reverse=True):
            at = at % (len(out) + 1)
            near = out[at] if at < len(out) else ""
            indent = near[: len(near) - len(near.lstrip(" -"))].replace("-", " ")
            out.insert(at, "\n".join(indent + part for part in line.split("\n")))
        return "\n".join(out) + "\n"

    return st.lists(st.tuples(st.integers(0, 10_000), hostile_lines), min_size=1, max_size=3).map(
        splice
    )


def inputs(base: str) -> st.SearchStrategy[bytes]:
    hostile = spliced(base).map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(
        hostile,
        hostile,
        hostile,
        st.text(max_size=400).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.binary(max_size=400),
        st.just(base.encode()),
    )


# A reader that hangs: far longer than any example takes, even on a loaded machine.
HANG = 10.0


def ends_well(call: Callable[[], Any], errors: tuple[type[Exception], ...], named: str) -> Any:
    """`call()` returns, or raises one of `errors` naming the input (`named`), within HANG
    seconds; any other exception fails the example with its traceback."""
    start = time.perf_counter()
    try:
        result = call()
    except errors as exc:
        assert named in str(exc), f"{type(exc).__name__} does not name {named}: {exc}"
        result = exc
    took = time.perf_counter() - start
    assert took < HANG, f"took {took:.2f} s"
    return result


# --- the readers ----------------------------------------------------------------------------

STACK = (ROOT / "Pulumi.dev.yaml").read_text()
MIX = "\n---\n".join(
    [
        (ROOT / "workloads/staging/research.yaml").read_text(),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n  namespace: team-research\n"
        "  labels:\n    kueue.x-k8s.io/queue-name: gpu-queue\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: c\n        image: busybox\n        resources:\n"
        "          requests:\n            nvidia.com/gpu: 2\n",
    ]
)
MANIFEST = (
    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kueue-system\n  labels:\n"
    "    control-plane: controller-manager\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
    "  name: kueue-manager-config\n  namespace: kueue-system\ndata:\n"
    "  controller_manager_config.yaml: |\n    apiVersion: config.kueue.x-k8s.io/v1beta1\n"
)
KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n"
    "    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n"
    "  user:\n    token: abc\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\n"
)
CATALOG = Catalog(
    queues=(TeamQueue("research", "team-research", "gpu-queue", "research-cq"),),
    frameworks=frozenset({"batch/job", "pod"}),
)


def _read(load_all: Callable[[str], list[Any]], text: str) -> str:
    """What a reader of `text` ends in, written out: its documents or its error."""
    try:
        return repr(load_all(text))
    except (yamlio.YamlRefused, yaml.YAMLError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _scanned(text: str) -> list[Any]:
    """The rule without its shortcut: every text scanned as events, then loaded."""
    yamlio.check(text, "f.yaml")
    try:
        return list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    except yaml.YAMLError:
        return list(yaml.safe_load_all(text))


EDGES = [  # each just past what the shortcut may take, and just within
    'k: !!int "' + "\\x31" * 101 + '"',  # an integer of 101 digits, written with escapes
    "k: " + "1" * 100,
    "k: " + "1" * 101,
    "k: " + "[" * 98 + "]" * 98,
    "k: " + "[" * 99 + "]" * 99,
    "k: " + "[" * 100 + "]" * 100,
    "k: " + "[" * 99 + "{}" + "]" * 99,
    "- " + "[" * 99 + "]" * 99,
    "a: 1\n---\nb: " + "[" * 100 + "]" * 100,
    # too deep under a key a later duplicate replaces: gone from the value, not from the text
    "k: " + "[" * 100 + "]" * 100 + "\nk: 1",
]


@FUZZ
@given(text=st.one_of(spliced(MIX), spliced(STACK), spliced(MANIFEST), st.text(max_size=400)))
def test_the_shortcut_past_the_scan_reads_and_refuses_as_the_scan_does(text: str) -> None:
    """yamlio reads text with no anchor, alias, tag or long digit run without scanning its
    events, and holds what libyaml builds to the depth bound instead: the same documents, the
    same refusal (line, key and problem) as scanning every text."""
    for edge in EDGES:
        assert _read(lambda t: yamlio.load_all(t, "f.yaml"), edge) == _read(_scanned, edge), edge
    assert _read(lambda t: yamlio.load_all(t, "f.yaml"), text) == _read(_scanned, text)


@FUZZ
@given(data=inputs(STACK))
def test_a_stack_file_ends_in_a_config_or_an_error_naming_it(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    project = tmp_path_factory.mktemp("stack")
    (project / "Pulumi.fz.yaml").write_bytes(data)
    raw = ends_well(lambda: read_config("fz", project), (StackFileError,), "Pulumi.fz.yaml")
    if isinstance(raw, dict):  # the model's errors name each key of the file
        ends_well(lambda: load_config(raw), (ConfigError,), "")


@FUZZ
@given(data=inputs(MIX))
def test_a_mix_ends_in_entries_each_naming_its_file(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("mix")
    (folder / "m.yaml").write_bytes(data)
    entries = ends_well(lambda: load_mix(folder, CATALOG, folder), (MixTooLarge,), "mix")
    for entry in entries:
        assert entry.source.startswith("m.yaml"), entry
        assert entry.status == "ok" or entry.problem, entry


@FUZZ
@given(data=inputs(MANIFEST))
def test_a_manifest_ends_in_objects_or_an_error_naming_it(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("manifest") / "manifests.yaml"
    path.write_bytes(data)
    config = KueueConfig.model_validate({"manifest": {"path": str(path)}})
    ends_well(lambda: load_manifest(config), (ManifestError,), str(path))


@FUZZ
@given(data=inputs(KUBECONFIG))
def test_a_kubeconfig_ends_in_a_connection_or_an_error_naming_it(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_bytes(data)
    ends_well(
        lambda: resolve(None, None, run_exec=False, files=[path]),
        (KubeconfigError,),
        f"kubeconfig {path}",
    )
    text = data.decode("utf-8", "replace")
    if text:  # empty is unset: then $KUBECONFIG's, not the input
        ends_well(lambda: resolve(text, None, run_exec=False), (KubeconfigError,), "kubeconfig")


# --- record: a hostile API server -----------------------------------------------------------

names = st.one_of(
    st.sampled_from(["team-research", "gpu-queue", "research-cq", "train"]),
    st.text(max_size=12),
    st.sampled_from(["../x", "..", "/etc", "a\nb", "a/b", ".", "x" * 300, "\u202e"]),
)
WORKLOAD = {
    "metadata": {"name": "train", "namespace": "team-research", "creationTimestamp": "NOW"},
    "spec": {"queueName": "gpu-queue", "podSets": [{"name": "main", "count": 1}]},
    "status": {"conditions": []},
}


@st.composite
def cluster(draw: st.DrawFn) -> dict[str, bytes]:
    """What the server answers on each path record reads: a plausible listing with names
    drawn from the hostile ones, or hostile bytes."""

    def answer(items: list[Any]) -> bytes:
        hostile = draw(
            st.one_of(
                st.none(),
                st.sampled_from([50, 101, 1_001, 30_000]).map(lambda n: b"[" * n + b"]" * n),
                st.sampled_from([99, 101, 4_301]).map(lambda n: b'{"items": [' + b"7" * n + b"]}"),
                st.binary(max_size=60),
                st.just(b"[]"),
                st.just(b"null"),
            )
        )
        return hostile if hostile is not None else json.dumps({"items": items}).encode()

    namespace, queue, name = draw(names), draw(names), draw(names)
    workload = json.loads(json.dumps(WORKLOAD).replace("NOW", time.strftime("%Y-%m-%dT%H:%M:%SZ")))
    workload["metadata"].update(namespace=namespace, name=name)
    workload["spec"]["queueName"] = queue
    return {
        "clusterqueues": answer([{"metadata": {"name": "research-cq"}}]),
        "localqueues": answer(
            [
                {
                    "metadata": {"namespace": namespace, "name": queue},
                    "spec": {"clusterQueue": "research-cq"},
                }
            ]
        ),
        "workloads": answer([workload]),
        "jobs": answer([]),
    }


class _Pool:
    def __init__(self, answers: dict[str, bytes]) -> None:
        self.answers = answers

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        body = next((v for k, v in self.answers.items() if url.rstrip("/").endswith(k)), b"{}")
        return SimpleNamespace(status=200, data=body)


@FUZZ
@given(answers=cluster())
def test_record_ends_in_a_recording_or_an_error_naming_the_answer(
    tmp_path_factory: pytest.TempPathFactory, answers: dict[str, bytes]
) -> None:
    api = SimpleNamespace(
        rest_client=SimpleNamespace(pool_manager=_Pool(answers)),
        configuration=SimpleNamespace(host="https://cluster", api_key={}),
    )
    base = tmp_path_factory.mktemp("record")
    project = base / "project"
    project.mkdir()
    out = project / "mix"
    before = sorted(base.rglob("*"))
    with (
        contextlib.redirect_stderr(io.StringIO()) as err,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(record, "connect", lambda *a: (Rest(api), "the fuzzed cluster", None))
        code = ends_well(lambda: record.main(["--out", str(out)]), (), "")
    assert code in (0, 2), err.getvalue()
    if code == 2:
        assert err.getvalue().startswith("record: "), err.getvalue()
    after = sorted(base.rglob("*"))
    outside = [p for p in after if p not in before and not p.is_relative_to(out)]
    assert outside == [], f"record wrote outside OUT: {outside}"
