"""Benchmark: fresh sandbox rounds, from the host. Each round starts the sandbox, deploys
the local stack with the real CLI (Kueue install through the readiness gate to queues),
replays the guide and stops the sandbox; it prints each step's time and whether it passed.
Usage: python -m sandbox.bench.fresh_install [ROUNDS]   (make bench ROUNDS=5)"""

from __future__ import annotations

import subprocess
import sys
import time

from sandbox.paths import ROOT

SANDBOX = ["bash", str(ROOT / "sandbox" / "sandbox.sh")]
PY = str(ROOT / ".venv" / "bin" / "python")
STEPS = {
    "sandbox up": [*SANDBOX, "up"],
    "pulumi up (fresh)": [
        *SANDBOX,
        "exec",
        PY,
        "-m",
        "sandbox.pulumi_stack",
        "up",
        "--yes",
        "--skip-preview",
    ],
    "walkthrough": [*SANDBOX, "exec", PY, "-m", "sandbox.walkthrough"],
    "sandbox down": [*SANDBOX, "down"],
}


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    subprocess.run([*SANDBOX, "down"], capture_output=True, check=False)
    print("| round | " + " | ".join(STEPS) + " | result |")
    print("|---" * (len(STEPS) + 2) + "|")
    failures = 0
    for n in range(1, rounds + 1):
        cells, ok = [], True
        for argv in STEPS.values():
            started = time.monotonic()
            done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
            cells.append(f"{time.monotonic() - started:.1f}s")
            if done.returncode != 0:
                ok = False
                print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
                subprocess.run([*SANDBOX, "down"], capture_output=True, check=False)
                break
        failures += not ok
        print(
            f"| {n} | "
            + " | ".join(cells + ["-"] * (len(STEPS) - len(cells)))
            + f" | {'pass' if ok else 'FAIL'} |"
        )
    print(f"\n{rounds - failures} of {rounds} fresh installs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
