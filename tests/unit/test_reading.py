"""The reading rules (issue 42, classes 3 and 5), through every reader of user or cluster text:
YAML that expands (an alias bomb, 20,000-deep nesting, a 5,000-digit integer, too much text)
is refused by gpu_queues/yamlio.py before anything is built, and a path that is no regular
file (a FIFO, a folder, a device) by gpu_queues/files.py before it is opened for reading.
Each refusal is the reader's own clear error naming the file, and the line or key, in well
under a second: never a traceback, never a hang."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gpu_queues import yamlio
from gpu_queues.config import yamledit
from gpu_queues.config.model import KueueConfig
from gpu_queues.config.stackfile import StackFileError, read_config
from gpu_queues.files import NotReadable, read_bytes
from gpu_queues.kueue.client import KubeconfigError, file_client, resolve
from gpu_queues.release.manifest import ManifestError, load_manifest
from gpu_queues.tools import promote, quota_diff, status
from gpu_queues.whatif.documents import read_documents
from gpu_queues.whatif.workloads import KubeError, Rest

pytestmark = pytest.mark.unit


def bomb(levels: int = 6) -> str:
    """Anchors of ten aliases each, on one line: 10^levels nodes once expanded, a few hundred
    bytes."""
    parts = ["a0: &a0 [x]"]
    for i in range(1, levels):
        parts.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "{" + ", ".join(parts) + "}"


# Each is the value of a key `hostile:` (so a reader that never looks at the key still reads it).
HOSTILE = {
    "alias-bomb": (" " + bomb() + "\n", "aliases would expand the document"),
    "deep": (" " + "[" * 20_000 + "]" * 20_000 + "\n", "nested deeper than 100 levels"),
    "long-integer": (" " + "7" * 5_000 + "\n", "an integer of 5,000 characters"),
}
IDS = list(HOSTILE)


def hostile(case: str, key: str = "hostile") -> str:
    return f"{key}:{HOSTILE[case][0]}"


def names(message: str, case: str, at: str, key: str) -> None:
    """The refusal names the file and line (`at`), the key where the parser still knows it
    (libyaml reads a deep flow collection ahead, so only its line), and the problem."""
    assert message.startswith(at + ("" if case == "deep" else f" (key {key}")), message
    assert HOSTILE[case][1] in message, message


def refused_quickly(call: Callable[[], Any], error: type[Exception]) -> str:
    """`call`'s error message; it must be `error`, and come in well under a second."""
    start = time.perf_counter()
    with pytest.raises(error) as info:
        call()
    assert time.perf_counter() - start < 1.0
    return str(info.value)


# --- the rule itself ------------------------------------------------------------------------


@pytest.mark.parametrize("case", IDS)
def test_the_rule_refuses_naming_the_file_the_line_and_the_key(case: str) -> None:
    text = "a:\n  b: 1\n" + hostile(case, "c")
    message = refused_quickly(lambda: yamlio.load(text, "f.yaml"), yamlio.YamlRefused)
    assert message.startswith("f.yaml: line "), message
    assert HOSTILE[case][1] in message, message


def test_a_bomb_is_refused_where_it_crosses_the_bound_without_being_expanded() -> None:
    # 10^9 nodes: expanding it would take minutes and gigabytes; the scan adds up sizes only.
    message = refused_quickly(lambda: yamlio.load("x: " + bomb(10), "f.yaml"), yamlio.YamlRefused)
    assert message.startswith("f.yaml: line 1 (key x.a4[3]): its aliases would expand"), message
    assert "2,345,679,000 nodes, over the 10,000 it may" in message


def test_aliases_that_do_not_multiply_the_document_are_read() -> None:
    """Sharing one template many times is fine: the expansion is at most what is written."""
    items = "".join(f"- {{name: j{i}, spec: *t}}\n" for i in range(3000))
    text = "t: &t {a: 1, b: 2, c: [1, 2, 3]}\njobs:\n" + items.replace("- ", "  - ")
    assert len(yamlio.load(text, "f.yaml")["jobs"]) == 3000
    assert yamlio.load("a: &x [1]\nb: *x\n<<: {c: 1}\n", "f.yaml") == {"a": [1], "b": [1], "c": 1}


def test_every_file_the_project_ships_is_within_the_bounds() -> None:
    root = Path(__file__).resolve().parents[2]
    shipped = [*root.glob("Pulumi*.yaml"), *root.glob("workloads/**/*.yaml")]
    assert len(shipped) > 5
    for path in shipped:
        yamlio.check(path.read_text(encoding="utf-8"), path.name)


def test_too_much_text_is_refused_before_it_is_parsed() -> None:
    small = yamlio.Bounds(max_bytes=100)
    with pytest.raises(yamlio.YamlRefused, match=r"^f.yaml: 101 characters, over the limit"):
        yamlio.load("a: " + "x" * 98, "f.yaml", small)
    with pytest.raises(yamlio.YamlRefused, match=r"^r: 101 characters, over the limit"):
        yamlio.load_json('"' + "x" * 99 + '"', "r", small)


def test_json_answers_are_held_to_the_same_bounds() -> None:
    deep = "[" * 20_000 + "]" * 20_000
    assert "nested deeper" in refused_quickly(lambda: yamlio.load_json(deep, "r"), ValueError)
    long = '{"a": ' + "9" * 5000 + "}"
    assert "5,000 characters" in refused_quickly(lambda: yamlio.load_json(long, "r"), ValueError)
    assert yamlio.load_json('{"a": [1, 2.5, "x"]}', "r") == {"a": [1, 2.5, "x"]}


# --- every reader ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", IDS)
def test_a_stack_file_is_refused_even_under_another_namespace(project: Path, case: str) -> None:
    text = "config:\n  gpu-queues:teams: []\n  " + hostile(case, "other:key")
    (project / "Pulumi.dev.yaml").write_text(text)
    message = refused_quickly(lambda: read_config("dev", project), StackFileError)
    names(message, case, "Pulumi.dev.yaml: line 3", "config.other:key")


@pytest.mark.parametrize("case", IDS)
def test_quota_diff_says_which_stack_file_it_refuses(
    project: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "Pulumi.dev.yaml").write_text("config:\n  gpu-queues:" + hostile(case, "x"))
    (project / "Pulumi.prod.yaml").write_text("config: {}\n")
    assert quota_diff.main(["dev", "prod", "--root", str(project)]) == 2
    err = capsys.readouterr().err
    assert "Pulumi.dev.yaml: line 2" in err and HOSTILE[case][1] in err, err


@pytest.mark.parametrize("case", IDS)
def test_the_layout_keeping_editor_refuses_before_it_loads(case: str) -> None:
    text = "config:\n  a: 1\n" + hostile(case)
    message = refused_quickly(lambda: yamledit.edit(text, {("config", "a"): 2}), Exception)
    assert "line " in message and HOSTILE[case][1] in message, message


@pytest.mark.parametrize("case", IDS)
def test_a_mix_file_is_a_row_naming_it_and_the_rest_still_replays(
    tmp_path: Path, case: str
) -> None:
    (tmp_path / "a.yaml").write_text("kind: Job\nmetadata: {name: fine}\n")
    (tmp_path / "b.yaml").write_text("kind: Job\nmetadata:\n  name: x\n  " + hostile(case))
    start = time.perf_counter()
    docs = read_documents(tmp_path, tmp_path)
    assert time.perf_counter() - start < 1.0
    assert [(d.source, d.error is None) for d in docs] == [("a.yaml#1", True), ("b.yaml", False)]
    names(str(docs[1].error), case, "b.yaml: line 4", "metadata.hostile")


@pytest.mark.parametrize("case", IDS)
def test_a_manifest_path_is_refused_naming_it(tmp_path: Path, case: str) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  " + hostile(case))
    config = KueueConfig.model_validate({"manifest": {"path": str(path)}})
    message = refused_quickly(lambda: load_manifest(config), ManifestError)
    names(message, case, f"Kueue manifest {path}: line 5", "metadata.hostile")


@pytest.mark.parametrize("case", IDS)
def test_a_kubeconfig_is_refused_naming_the_key_never_a_value(tmp_path: Path, case: str) -> None:
    text = "apiVersion: v1\nusers:\n- name: u\n  user:\n    token:" + HOSTILE[case][0]
    path = tmp_path / "config"
    path.write_text(text)
    message = refused_quickly(lambda: file_client(path), KubeconfigError)
    names(message, case, f"kubeconfig {path}: line 5", "users[0].user.token")
    assert "7777" not in message and "*a4" not in message
    message = refused_quickly(lambda: resolve(text, None), KubeconfigError)
    assert message.startswith("gpu-queues:kubernetes.kubeconfig: line 5"), message


@pytest.mark.parametrize("case", IDS)
def test_status_names_the_kubeconfig_it_refuses(
    tmp_path: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config"
    path.write_text("apiVersion: v1\n" + hostile(case, "clusters"))
    assert status.main(["--kubeconfig", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"kubeconfig {path}: line 2" in err and HOSTILE[case][1] in err, err


class _Pool:
    """What a hostile API server (or a proxy before it) answers to every request."""

    def __init__(self, body: bytes, status: int = 200) -> None:
        self.body, self.status = body, status

    def request(self, *args: Any, **kwargs: Any) -> Any:
        return SimpleNamespace(status=self.status, data=self.body)


def hostile_rest(body: bytes) -> Rest:
    api = SimpleNamespace(
        rest_client=SimpleNamespace(pool_manager=_Pool(body)),
        configuration=SimpleNamespace(host="https://cluster", api_key={}),
    )
    return Rest(api)


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"[" * 20_000 + b"]" * 20_000, "nested deeper than 100 levels"),
        (b'{"items": [' + b"1" * 5000 + b"]}", "an integer of 5,000 characters"),
        (b"<html>proxy login</html>", "is not JSON"),
    ],
    ids=["deep", "long-integer", "not-json"],
)
def test_a_cluster_answer_that_cannot_be_read_is_a_kube_error(body: bytes, says: str) -> None:
    rest = hostile_rest(body)
    message = refused_quickly(lambda: rest.get("/apis/kueue.x-k8s.io/v1beta2/workloads"), KubeError)
    assert message.startswith("the answer to GET /apis/kueue.x-k8s.io/v1beta2/workloads")
    assert says in message, message


# --- class 5: paths that are no regular file ------------------------------------------------


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


def within_a_second(call: Callable[[], Any]) -> Any:
    """`call()`'s result or error, run aside so that a read that blocks fails the test instead
    of hanging the suite (the `unblock` fixture then lets the blocked thread end)."""
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = call()
        except Exception as exc:
            out["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(1.0)
    assert not thread.is_alive(), "the reader blocked on a path that is no regular file"
    return out["value"]


@pytest.fixture
def unblock(tmp_path: Path) -> Any:
    """At teardown, opens every FIFO under tmp_path for writing and closes it: a reader that
    blocked on one (the code before the rule) sees its end and returns."""
    yield
    for path in tmp_path.rglob("*"):
        if path.is_fifo():
            with contextlib.suppress(OSError):  # OSError: nobody is reading it
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.usefixtures("unblock")
def test_a_manifest_path_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    path = _fifo(tmp_path, "manifests.yaml")
    config = KueueConfig.model_validate({"manifest": {"path": str(path)}})
    error = within_a_second(lambda: load_manifest(config))
    assert isinstance(error, ManifestError), error
    assert f"cannot read the Kueue manifest {path}: it is a FIFO (named pipe)" in str(error)


@pytest.mark.usefixtures("unblock")
def test_a_mix_or_kubeconfig_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    mix = _fifo(tmp_path, "mix.yaml")
    docs = within_a_second(lambda: read_documents(mix))
    assert [d.error for d in docs] == [
        f"cannot read {mix}: it is a FIFO (named pipe), not a regular file"
    ]
    kubeconfig = _fifo(tmp_path, "config")
    error = within_a_second(lambda: file_client(kubeconfig))
    assert isinstance(error, KubeconfigError) and "FIFO" in str(error), error


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.mkdir(), "it is a folder"),
        (lambda p: os.mkfifo(p), "it is a FIFO (named pipe)"),
        (lambda p: p.symlink_to("/dev/zero"), "it is a character device"),
        (lambda p: p.symlink_to(p.parent / "gone"), "no such file"),
    ],
    ids=["folder", "fifo", "device", "dangling-link"],
)
def test_the_file_rule_reads_regular_files_only(
    tmp_path: Path, make: Callable[[Path], Any], says: str
) -> None:
    path = tmp_path / "x.yaml"
    make(path)
    with pytest.raises(NotReadable, match="^" + re.escape(f"cannot read the file: {says}")):
        read_bytes(path, "the file")
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(NotReadable, match="larger than 10 bytes"):
        read_bytes(tmp_path / "big", max_bytes=10)
    assert read_bytes(tmp_path / "big", max_bytes=11) == b"x" * 11


@pytest.mark.parametrize(
    "content", ["[1, 2]", '"v0.18.3"', "null", "7"], ids=["list", "string", "null", "number"]
)
def test_promote_with_an_outputs_file_that_is_no_mapping_is_an_input_error(
    project: Path, content: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = project / "outputs.json"
    outputs.write_text(content)
    assert promote.main(["dev", "prod", "--root", str(project), "--outputs", str(outputs)]) == 2
    err = capsys.readouterr().err
    assert f"outputs file {outputs} holds a JSON" in err and "not the mapping" in err, err


def test_promote_with_an_outputs_path_that_is_a_folder_is_an_input_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert promote.main(["dev", "prod", "--root", str(project), "--outputs", str(project)]) == 2
    assert "it is a folder, not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "is not JSON"),
        ('{"a": ' + "1" * 5000 + "}", "an integer of 5,000 characters"),
    ],
    ids=["not-json", "long-integer"],
)
def test_the_advisors_policy_pack_config_is_read_by_the_rules(
    tmp_path: Path, content: str, says: str
) -> None:
    from gpu_queues.advise.policy import _settings

    path = tmp_path / "dev.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=re.escape(says)) as info:
        _settings(path)
    assert str(path) in str(info.value)
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(ValueError, match="it is a folder"):
        _settings(tmp_path / "folder.json")
