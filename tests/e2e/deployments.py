"""The e2e session's stacks on its one sandbox, and the config each is deployed with: what the
`stacks` fixture (tests/e2e/conftest.py) hands every module, so that no module deploys and
destroys a stack of its own.

A module asks for a config (`stacks.up(name, source=..., overrides=...)`) and gets `pulumi
up` only when that config differs from the one the stack was last deployed with in this
session; the first ask for a stack always deploys it (a sandbox kept from an earlier session
may hold anything). A failed `up` leaves the stack's config unknown, so the next ask deploys
again. A move of the config is an `up` of the changed config, never destroy and up.

What a module may take for granted, and must leave (the ordering rules):
- `local` (the committed Pulumi.local.yaml) is deployed by the first module that needs it and
  is as committed at every module's start (the `local_as_committed` fixture deploys it again
  when the last module left it unknown, after a failed `up`) and end: a module that deploys it
  with overrides (the controller knobs, metrics, a Kueue upgrade) asks for the committed
  config again when it is done, before it removes anything its own config needed.
- Every other stack stays deployed, once asked for, until the session ends (the sandbox goes
  with it): a module leaves no workload in its stack's namespaces, and removes what it added
  to the cluster outside the stack (nodes, CRDs); it never assumes another module's stack is
  absent. The stacks share the sandbox's one node: their flavors and namespaces have names
  of their own, so none reads another's objects. (A destroy costs about 7 s a stack on the
  sandbox, namespaces waited out; an `up` of one such stack about 3 s.)
- The modules run in file order (`make test-e2e` runs them with -p no:randomly); none relies
  on that order for a stack, since each asks for its own.

Stacks this fixture does not deploy: test_cluster_faults destroys local-protected through it
(the documented way out of a protected claim is what it shows); test_promotion's target,
whose stack file the promotion writes, is the test's own to deploy and destroy; test_library
deploys a program of someone else's; test_multikueue runs on a topology of its own.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sandbox import pulumi_stack

Done = subprocess.CompletedProcess[str]


@dataclass(frozen=True)
class Config:
    """A stack's config as asked for: its stack file's bytes and the overrides on them."""

    source: str  # sha256 of the stack file (what pulumi_stack.prepare writes from)
    overrides: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, stack: str, source: Path | None, overrides: dict[str, str] | None) -> Config:
        path = source or pulumi_stack.source_of(stack)
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""
        return cls(digest, tuple(sorted((overrides or {}).items())))


@dataclass
class Deployments:
    deployed: dict[str, Config] = field(default_factory=dict)
    """Each stack's config as of its last successful `up` (none: unknown)."""
    ups: dict[str, Done] = field(default_factory=dict)
    """That `up`, its output included."""
    log: list[tuple[str, str]] = field(default_factory=list)
    """(stack, what ran): every pulumi operation this made, in order."""

    def up(
        self,
        stack: str = "local",
        *,
        source: Path | None = None,
        overrides: dict[str, str] | None = None,
    ) -> Done:
        """The stack deployed with this config: the `up` that deployed it (its result is the
        caller's to assert), run now only when the stack was last deployed otherwise."""
        want = Config.of(stack, source, overrides)
        if self.deployed.get(stack) == want:
            return self.ups[stack]
        self.deployed.pop(stack, None)  # unknown until this up has succeeded
        self.log.append((stack, "up" + (f" {sorted(overrides)}" if overrides else "")))
        done = pulumi_stack.pulumi(
            "up",
            "--yes",
            "--skip-preview",
            stack=stack,
            source=source,
            overrides=overrides,
            check=False,
            capture=True,
        )
        if done.returncode == 0:
            self.deployed[stack], self.ups[stack] = want, done
        return done

    def destroy(
        self, stack: str, *, source: Path | None = None, overrides: dict[str, str] | None = None
    ) -> Done:
        """`pulumi destroy`, for a module whose test is the destroy itself."""
        self.deployed.pop(stack, None)
        self.log.append((stack, "destroy"))
        return pulumi_stack.pulumi(
            "destroy",
            "--yes",
            stack=stack,
            source=source,
            overrides=overrides,
            check=False,
            capture=True,
        )

    def committed(self, stack: str) -> bool:
        """Whether the stack is known to be deployed as its stack file says, no overrides."""
        return self.deployed.get(stack) == Config.of(stack, None, None)

    def asked(self, stack: str) -> bool:
        """Whether anything deployed (or tried to deploy, or destroyed) it this session."""
        return any(s == stack for s, _ in self.log)

    def changed(self, stack: str) -> None:
        """A test ran pulumi on the stack itself (two `up` at once, say): its config is unknown
        until it is asked for again."""
        self.deployed.pop(stack, None)
