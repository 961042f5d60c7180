"""How many examples the property (hypothesis) tests run: few enough in the everyday unit and
policy suites to keep them fast, many more in the deep run `make test` does as a step of its
own (`make test-deep`: `pytest -m "(unit or policy) and hypothesis" --hypothesis-profile=deep`).

A property test states its everyday count with `examples(n)`; a profile scales every count
by its max_examples over hypothesis's default of 100 (a test without its own count runs the
profile's max_examples). The deep profile is 10x: every test then runs more examples than
the suites ran before the counts were split (promotion fuzz 60, config properties 150).
"""

from __future__ import annotations

from hypothesis import Phase, settings

EVERYDAY = 100  # hypothesis's own default max_examples: the counts tests state are for it
DEEP = 1000

settings.register_profile("deep", max_examples=DEEP)
# `make mutation` (mutmut): a failing example is a killed mutant, found as in the everyday run
# (derandomized) and not shrunk, which could take minutes a mutant; nothing is written to the
# example database.
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.explicit, Phase.generate),
)


def examples(everyday: int) -> int:
    """`everyday` examples scaled to the loaded profile (read when the test module is
    imported, after pytest loaded --hypothesis-profile)."""
    return max(1, everyday * settings.default.max_examples // EVERYDAY)
