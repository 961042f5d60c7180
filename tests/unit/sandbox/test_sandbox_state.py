"""The sandbox's process record (.sandbox/state.json) is read while the clusters of a topology
start in threads and write it: a reader must only ever see a whole file."""

from __future__ import annotations

import threading

import pytest

from sandbox import cluster, procs

pytestmark = pytest.mark.unit


def test_readers_never_see_a_half_written_state_file(tmp_path, monkeypatch):
    monkeypatch.setattr(procs, "STATE_FILE", tmp_path / "state.json")
    # Big enough that a write takes more than one system call.
    big = {f"p{i}": {"pid": i, "argv": ["x" * 200] * 10} for i in range(100)}
    procs.save_state({"processes": big})
    stop = threading.Event()
    errors: list[Exception] = []

    def write() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            procs.save_state({"processes": big, "n": n})

    def read() -> None:
        for _ in range(200):
            try:
                assert set(procs.load_state()["processes"]) == set(big)
            except Exception as e:  # any failure to read is the bug
                errors.append(e)
                return

    writers = [threading.Thread(target=write) for _ in range(2)]
    for w in writers:
        w.start()
    try:
        read()
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert not errors, f"a reader saw a half-written state file: {errors[0]!r}"
    assert not [p for p in tmp_path.iterdir() if p.name != "state.json"], "temp files left"


def test_a_start_s_logs_begin_empty_and_the_last_sandbox_s_are_kept_once(tmp_path, monkeypatch):
    """Processes append to their logs, so a failed start's dump would end with what the last
    sandbox said as it was stopped (CI's run of 6 December: a stopped operator's last words
    hid why the next start failed)."""
    logs = tmp_path / "logs"
    monkeypatch.setattr(cluster, "LOGS", logs)
    cluster.keep_previous_logs()  # nothing there yet: nothing to keep
    assert not logs.exists() and not (tmp_path / "logs.previous").exists()
    for said in ("first", "second"):
        (logs / "worker").mkdir(parents=True)
        (logs / "op.log").write_text(f"{said} sandbox stopped\n")
        (logs / "worker" / "kueue.log").write_text(f"{said}\n")
        cluster.keep_previous_logs()
        assert not logs.exists()
    previous = tmp_path / "logs.previous"
    assert (previous / "op.log").read_text() == "second sandbox stopped\n"
    assert (previous / "worker" / "kueue.log").read_text() == "second\n"
