"""`make what-if ENGINE=sandbox ... BASE=<rev>` from the host: each side on a fresh sandbox
of its own,
shaped like the side's stack file (its flavor's node is labelled and tainted: pods run only
on a sandbox shaped like the stack), the stack file read at the revision for the base, and
the report saying what a quota move does.

The stack (whatif/Pulumi.whatif-move.yaml) is committed as the base; the work tree moves 2
GPUs of nominal quota from alpha (6 -> 4) to beta (2 -> 4), borrowing off. The mix
(whatif/mix): alpha's three 2-GPU jobs of 1h at 0; beta's notebook pod (CPU only, 10m) at
0, b-1 (30m) and b-2 at 5m, b-3 at 10m (both running to the end), 2 GPUs each.
  base: alpha runs all three at once. beta holds 2: b-1 runs, b-2 waits for its end (35m:
        30m), b-3 waits for good. Nothing is left to happen after 1h.
  new:  alpha runs two, a-3 waits for them to end (1h). beta runs b-1 and b-2 at once, b-3
        waits for b-1 (35m: 25m). a-3 ends at 2h.
The same change moves the project's Kueue pin (toolchain/pins.env beside the stack file) from
the oldest supported release to the newest, as `make pin-kueue` does: each side runs its own
release, which the report names and replay.json shows as read from the running controller.
The mix needs nothing that differs between the two, so the outcomes above hold on both.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_queues.kueue.versions import supported
from gpu_queues.pins import PINS_FILE
from gpu_queues.release.pin import set_pinned_version

pytestmark = pytest.mark.sandbox

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).parent / "whatif"
STACK = "whatif-move"
OLD, NEW = supported()[0], supported()[-1]


def pin(repo: Path, version: str) -> None:
    """The repository's toolchain/pins.env: the project's, with KUEUE_VERSION=`version`."""
    (repo / "toolchain").mkdir(exist_ok=True)
    (repo / "toolchain" / "pins.env").write_text(set_pinned_version(PINS_FILE.read_text(), version))


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        cwd=root, check=True, capture_output=True,
    )  # fmt: skip


def test_base_shows_what_a_quota_move_changes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    stack_file = repo / f"Pulumi.{STACK}.yaml"
    shutil.copy(HERE / f"Pulumi.{STACK}.yaml", stack_file)
    assert f".kueue/{OLD}/manifests.yaml" in stack_file.read_text()
    pin(repo, OLD)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "base")
    text = stack_file.read_text()
    moved = text.replace("nominalQuota: 6, borrowingLimit: 0", "nominalQuota: 4, borrowingLimit: 0")
    moved = moved.replace(
        "nominalQuota: 2, borrowingLimit: 0", "nominalQuota: 4, borrowingLimit: 0"
    )
    assert moved.count("nominalQuota: 4, borrowingLimit: 0") == 2
    # The pin moves; the stack's manifest pin goes with it (here: back to the release URL,
    # which the sandbox substitutes with the release rendered from the new pin's module).
    lines = moved.splitlines(keepends=True)
    manifest = next(i for i, x in enumerate(lines) if x.strip() == "manifest:")
    del lines[manifest : manifest + 3]
    assert "sha256" not in "".join(lines)
    stack_file.write_text("".join(lines))
    pin(repo, NEW)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "sandbox.replay.cli", "--stack", STACK, "--root", str(repo),
         "--workloads", str(HERE / "mix"), "--base", "main", "--out", str(out),
         "--engine", "sandbox"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert set(report) == {"new", "base"}
    replay = json.loads((out / "replay.json").read_text())

    def outcomes(side: str) -> dict[str, tuple[str, int | None]]:
        return {w["name"]: (w["outcome"], w["waitSeconds"]) for w in report[side]["workloads"]}

    assert outcomes("base") == {
        "a-1": ("finished", 0), "a-2": ("finished", 0), "a-3": ("finished", 0),
        "b-notebook": ("finished", 0), "b-1": ("finished", 0), "b-2": ("admitted", 1800),
        "b-3": ("pending", None),
    }  # fmt: skip
    assert outcomes("new") == {
        "a-1": ("finished", 0), "a-2": ("finished", 0), "a-3": ("finished", 3600),
        "b-notebook": ("finished", 0), "b-1": ("finished", 0), "b-2": ("admitted", 0),
        "b-3": ("admitted", 1500),
    }  # fmt: skip

    def teams(side: str) -> list[tuple[object, ...]]:
        return [tuple(t.values()) for t in report[side]["teams"]]

    # Both runs are counted until 2h: the base's b-2 runs 35m-2h, the new b-2 5m-2h, b-3 35m-2h.
    assert teams("base") == [
        ("alpha", "move-alpha-cq", 3, 0, 6.0, 0, 0),
        ("beta", "move-beta-cq", 3, 1, 3.83, 0, None),
    ]
    assert teams("new") == [
        ("alpha", "move-alpha-cq", 3, 0, 6.0, 0, 3600),
        ("beta", "move-beta-cq", 4, 0, 7.67, 0, 1500),
    ]
    assert replay["base"]["source"].startswith(f"{STACK}@")
    assert replay["new"]["source"] == f"{STACK} (work tree)"
    # Each side ran its own release: the controller pod's image and the binary playing it.
    for side, version in (("base", OLD), ("new", NEW)):
        ran = {k: replay[side][k] for k in ("kueue_version", "kueue_image", "kueue_binary")}
        assert ran == {
            "kueue_version": version,
            "kueue_image": f"registry.k8s.io/kueue/kueue:{version}",
            "kueue_binary": f".toolchain/bin/kueue-{version}",
        }, replay[side]
    md = (out / "report.md").read_text()
    assert f"- Kueue {OLD} → {NEW}\n" in md
    assert f"on the real Kueue {NEW} (`{replay['base']['source']}` on its own release, {OLD})" in md
    assert "- alpha: p90 wait 0s → 1h" in md
    assert (
        "- beta: 1 pending → 0 pending; 3 admitted → 4 admitted; p90 wait not admitted → 25m" in md
    )
    assert "- move-beta/b-3: pending → admitted (move-gpu)" in md
    # The sandbox of each side was stopped afterwards: its network namespace is gone, and
    # with it what the sandbox keeps while it is up; `status` then finds no namespace (exit
    # 1, nothing printed), not a sandbox with a dead process (exit 1, a DEAD row).
    sandbox_sh = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]
    name = subprocess.run([*sandbox_sh, "name"], capture_output=True, text=True, check=True)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    assert name.stdout.strip() not in [x.split()[0] for x in listed.stdout.splitlines() if x]
    assert not (ROOT / ".sandbox" / "netns").exists()
    assert not (ROOT / ".sandbox" / "state.json").exists()
    status = subprocess.run([*sandbox_sh, "status"], capture_output=True, text=True, check=False)
    assert (status.returncode, status.stdout) == (1, ""), status.stdout + status.stderr
